// The local runtime of every run: `wrangler dev` on 127.0.0.1 with its own fresh state, through
// scripts/lib/local-worker.mjs (its own process group). The soak also kills it and restarts it on the
// same state, and restarts the Durable Objects alone (DEV_OBJECT_RESTARTS), each with its window.
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { LocalWorker, prepareState, UNATTENDED_ENV } from "../../scripts/lib/local-worker.mjs";
import { created } from "./run.ts";

/** A window opens this long before a kill or a restart: requests in flight then may be cut too. */
const KILL_MARGIN_MS = 1_000;
/** A restart window closes this long after the objects answered: calls they were serving fail meanwhile. */
const RESTART_MARGIN_MS = 2_000;

interface KillWindow {
  from: number;
  killedAt: number;
  readyAt: number | null;
}
interface RestartWindow {
  from: number;
  at: number;
  until: number | null;
  scope: string;
  restarted: number | null;
}

export async function startRuntime(o: {
  port: number;
  state: string;
  logFile: string;
  vars?: Record<string, string>;
  script?: string; // the Worker's entry instead of wrangler.toml's main
  readyLimitMs?: number;
  logLevel?: string;
}) {
  const { port, state, logFile } = o;
  rmSync(state, { recursive: true, force: true });
  mkdirSync(state, { recursive: true });
  writeFileSync(logFile, "");
  const envFile = await prepareState(state);
  let current: LocalWorker | null = null;
  const windows: KillWindow[] = [];
  const restarts: RestartWindow[] = [];
  const baseUrl = `http://127.0.0.1:${port}`;
  const note = (what: string) => appendFileSync(logFile, `\n----- ${what} at ${new Date().toISOString()}\n`);

  async function start() {
    const started = Date.now();
    note("wrangler dev starting");
    const { script, vars, logLevel = "warn" } = o;
    const options = { script, port, inspectorPort: port + 1, state, envFile, vars, logLevel, logFile };
    current = new LocalWorker({ ...options, env: UNATTENDED_ENV, tailChars: 8_000 });
    await current.waitUntilReady({ limitMs: o.readyLimitMs ?? 120_000 });
    return Date.now() - started;
  }
  const readyMs = await start();

  return {
    baseUrl,
    readyMs,
    windows,
    restarts,
    /** The process group's id (whose processes are the runtime), null once stopped. */
    pid: () => current?.pid ?? null,
    alive: () => current !== null && !current.hasExited,
    /** The named objects end themselves (POST /admin/v1/dev/object-restarts); the Worker and its queues stay up. */
    async restartObjects(scope: string, objects: { workspaceIds: string[]; channelNumberIds: string[] }) {
      const at = Date.now();
      const window: RestartWindow = { from: at - KILL_MARGIN_MS, at, until: null, scope, restarted: null };
      restarts.push(window);
      note(`objects restarted (${scope})`);
      window.restarted = (await created(baseUrl, "/admin/v1/dev/object-restarts", objects, undefined, 200)).restarted;
      window.until = Date.now() + RESTART_MARGIN_MS;
      return window;
    },
    /** SIGKILL to the whole group, then a restart on the same state; resolves when it answers again. */
    async killAndRestart() {
      const killedAt = Date.now();
      const window: KillWindow = { from: killedAt - KILL_MARGIN_MS, killedAt, readyAt: null };
      windows.push(window);
      note("SIGKILL to the process group");
      await current?.kill();
      current = null;
      await start();
      window.readyAt = Date.now();
      return { ...window, readyAt: window.readyAt };
    },
    /** Whether [start, end] overlaps a kill or restart window (an open window counts up to now). */
    inWindow(start: number, end: number) {
      return (
        windows.some((w) => start <= (w.readyAt ?? Date.now()) && end >= w.from) ||
        restarts.some((w) => start <= (w.until ?? Date.now()) && end >= w.from)
      );
    },
    async stop() {
      await current?.stop();
      current = null;
    },
  };
}
export type Runtime = Awaited<ReturnType<typeof startRuntime>>;
