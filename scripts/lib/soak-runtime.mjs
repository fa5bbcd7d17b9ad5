// The local runtime of `npm run soak`: `wrangler dev` on one persistent state directory, killed
// (SIGKILL to its whole process group) and restarted on that same state, with the kill windows
// recorded: from a margin before the kill until the restarted Worker answers.
import { appendFileSync, mkdirSync, rmSync } from "node:fs";
import { prepareState, spawnWorker, waitUntilReady } from "./local-worker.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A kill window opens this long before the kill: requests in flight then may be cut too. */
export const KILL_MARGIN_MS = 1_000;

export function createRuntime({ port, inspectorPort, state, vars, logFile }) {
  rmSync(state, { recursive: true, force: true });
  mkdirSync(state, { recursive: true });
  const envFile = prepareState(state);
  const baseUrl = `http://127.0.0.1:${port}`;
  let current = null;
  let tail = "";
  const onOutput = (d) => {
    appendFileSync(logFile, d);
    tail = (tail + d).slice(-8_000);
  };
  /** { from, killedAt, readyAt }: `from` is KILL_MARGIN_MS before the kill. */
  const windows = [];

  async function start() {
    const started = Date.now();
    appendFileSync(logFile, `\n----- [soak] wrangler dev starting at ${new Date(started).toISOString()}\n`);
    current = spawnWorker({ port, inspectorPort, state, envFile, vars, onOutput });
    await waitUntilReady(baseUrl, current.child, () => tail, 120_000);
    return Date.now() - started;
  }

  /** Ends the group and waits until no process of it is left. */
  async function endGroup(signal) {
    if (!current) return;
    const proc = current;
    proc.signalGroup(signal);
    for (let i = 0; i < 100 && proc.groupAlive(); i++) await sleep(50);
    if (proc.groupAlive()) {
      proc.signalGroup("SIGKILL");
      for (let i = 0; i < 100 && proc.groupAlive(); i++) await sleep(50);
    }
    current = null;
  }

  return {
    baseUrl,
    windows,
    start,
    /** SIGKILL to the whole group, then a restart on the same state; resolves when it answers again. */
    async killAndRestart() {
      const killedAt = Date.now();
      const window = { from: killedAt - KILL_MARGIN_MS, killedAt, readyAt: null };
      windows.push(window);
      appendFileSync(logFile, `\n----- [soak] SIGKILL to the process group at ${new Date(killedAt).toISOString()}\n`);
      await endGroup("SIGKILL");
      await start();
      window.readyAt = Date.now();
      return window;
    },
    /** Whether [startMs, endMs] overlaps a kill window (an open window counts up to now). */
    inKillWindow(startMs, endMs) {
      return windows.some((w) => startMs <= (w.readyAt ?? Date.now()) && endMs >= w.from);
    },
    stop: () => endGroup("SIGTERM"),
  };
}
