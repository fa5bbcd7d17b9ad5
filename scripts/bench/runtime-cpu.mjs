// `npm run bench`: the CPU time of `wrangler dev`'s process group (wrangler, its workerd
// processes), from /proc (Linux only; null elsewhere).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** @typedef {{ total: number, parts: Record<"runtime" | "proxy" | "wrangler" | "other", number> }} CpuSample */

/** @type {number | null} */
let clockTicks = null;

/**
 * CPU time (ms) used so far by the processes of the group `group`, in total and by role: the
 * workerd that runs the Worker and its objects, the workerd of wrangler's proxy (it listens on
 * `proxyEntry`, our host:port), and wrangler's own Node process (which also prints every
 * request's log line).
 * @param {number | null} group @param {string} proxyEntry
 * @returns {CpuSample | null}
 */
export function runtimeCpuMs(group, proxyEntry) {
  if (process.platform !== "linux" || group === null) return null;
  if (clockTicks === null) {
    const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
    clockTicks = Number(out.stdout) > 0 ? Number(out.stdout) : 100;
  }
  /** @type {CpuSample["parts"]} */
  const parts = { runtime: 0, proxy: 0, wrangler: 0, other: 0 };
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    let cmdline;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp … utime stime: fields after the command name.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) !== group) continue;
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const role =
      comm === "workerd"
        ? cmdline.includes(`entry=${proxyEntry} `)
          ? "proxy"
          : "runtime"
        : comm === "node" || comm.startsWith("MainThread")
          ? "wrangler"
          : "other";
    parts[role] += ms;
  }
  return { total: parts.runtime + parts.proxy + parts.wrangler + parts.other, parts };
}
