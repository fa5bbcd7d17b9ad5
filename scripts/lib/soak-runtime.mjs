// The local runtime of `npm run soak`: `wrangler dev` on one persistent state directory, killed
// (SIGKILL to its whole process group) and restarted on that same state, with the kill windows
// recorded: from a margin before the kill until the restarted Worker answers.
import { appendFileSync, mkdirSync, rmSync } from "node:fs";
import { LocalWorker, prepareState, UNATTENDED_ENV } from "./local-worker.mjs";

/** A kill window opens this long before the kill: requests in flight then may be cut too. */
export const KILL_MARGIN_MS = 1_000;

/** @typedef {{ from: number, killedAt: number, readyAt: number | null }} KillWindow */

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

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    windows,
    start,
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
    async stop() {
      await current?.stop();
      current = null;
    },
  };
}
