// The local runtime of `npm run soak`: `wrangler dev` on one persistent state directory, killed
// (SIGKILL to its whole process group) and restarted on that same state, with the kill windows
// recorded: from a margin before the kill until the restarted Worker answers. And restarts of the
// Durable Objects alone (DEV_OBJECT_RESTARTS: the Worker process and its in-memory queues stay up),
// with their windows: from a margin before the restart until the objects answered it.
import { appendFileSync, mkdirSync, rmSync } from "node:fs";
import { callApi } from "./http-call.mjs";
import { LOCAL_SECRETS, LocalWorker, prepareState, UNATTENDED_ENV } from "./local-worker.mjs";

/** A kill window opens this long before the kill: requests in flight then may be cut too. */
export const KILL_MARGIN_MS = 1_000;

/** @typedef {{ from: number, killedAt: number, readyAt: number | null }} KillWindow */
/** A restart of objects alone: which (`scope`), how many ended, and its window. @typedef {{ from: number, at: number, until: number | null, scope: string, restarted: number | null }} RestartWindow */

/** A restart window closes this long after the objects answered: calls they were serving fail meanwhile. */
export const RESTART_MARGIN_MS = 2_000;

/**
 * @param {{ port: number, inspectorPort: number, state: string, vars: Record<string, string>, logFile: string }} options
 */
export async function createRuntime({ port, inspectorPort, state, vars, logFile }) {
  rmSync(state, { recursive: true, force: true });
  mkdirSync(state, { recursive: true });
  const envFile = await prepareState(state);
  /** @type {LocalWorker | null} */
  let current = null;
  /** `from` is KILL_MARGIN_MS before the kill. @type {KillWindow[]} */
  const windows = [];
  /** @type {RestartWindow[]} */
  const restarts = [];

  async function start() {
    const started = Date.now();
    appendFileSync(logFile, `\n----- [soak] wrangler dev starting at ${new Date(started).toISOString()}\n`);
    current = new LocalWorker({
      port,
      inspectorPort,
      state,
      envFile,
      vars,
      env: UNATTENDED_ENV,
      logLevel: "warn",
      logFile,
      tailChars: 8_000,
    });
    await current.waitUntilReady({ limitMs: 120_000 });
    return Date.now() - started;
  }

  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    windows,
    restarts,
    start,
    /**
     * The named objects end themselves (POST /admin/v1/dev/object-restarts); the Worker and its
     * queues stay up. Resolves when the route answered. `scope` names the choice, for the report.
     * @param {string} scope @param {{ workspaceIds: string[], channelNumberIds: string[] }} objects
     */
    async restartObjects(scope, objects) {
      const at = Date.now();
      /** @type {RestartWindow} */
      const window = { from: at - KILL_MARGIN_MS, at, until: null, scope, restarted: null };
      restarts.push(window);
      appendFileSync(logFile, `\n----- [soak] objects restarted (${scope}) at ${new Date(at).toISOString()}\n`);
      const res = await callApi(baseUrl, "POST", "/admin/v1/dev/object-restarts", LOCAL_SECRETS.ADMIN_TOKEN, objects);
      if (res.status !== 200)
        throw new Error(`POST /admin/v1/dev/object-restarts answered ${res.status}: ${res.text.slice(0, 300)}`);
      window.restarted = res.json.restarted;
      window.until = Date.now() + RESTART_MARGIN_MS;
      return window;
    },
    /** SIGKILL to the whole group, then a restart on the same state; resolves when it answers again. */
    async killAndRestart() {
      const killedAt = Date.now();
      /** @type {KillWindow} */
      const window = { from: killedAt - KILL_MARGIN_MS, killedAt, readyAt: null };
      windows.push(window);
      appendFileSync(logFile, `\n----- [soak] SIGKILL to the process group at ${new Date(killedAt).toISOString()}\n`);
      await current?.kill();
      current = null;
      await start();
      const readyAt = Date.now();
      window.readyAt = readyAt;
      return { ...window, readyAt };
    },
    /** Whether [startMs, endMs] overlaps a kill window (an open window counts up to now). @param {number} startMs @param {number} endMs */
    inKillWindow(startMs, endMs) {
      return windows.some((w) => startMs <= (w.readyAt ?? Date.now()) && endMs >= w.from);
    },
    /** Whether [startMs, endMs] overlaps an object restart's window. @param {number} startMs @param {number} endMs */
    inRestartWindow(startMs, endMs) {
      return restarts.some((w) => startMs <= (w.until ?? Date.now()) && endMs >= w.from);
    },
    async stop() {
      await current?.stop();
      current = null;
    },
  };
}
