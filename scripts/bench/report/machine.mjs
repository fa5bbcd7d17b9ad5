// `npm run bench`, report: the machine the run measured on.
import { createRequire } from "node:module";
import os from "node:os";
import { dirname } from "node:path";
import { CONNECTIONS } from "../parameters.mjs";

/**
 * @typedef {object} Machine
 * @property {string} date ISO time of the report
 * @property {string} cpuModel
 * @property {number} cores logical cores
 * @property {number} memoryGiB
 * @property {string} os
 * @property {string} arch
 * @property {string} node
 * @property {{ wrangler: string, workerd: string, autocannon: string }} versions
 */

const require = createRequire(import.meta.url);

/** @param {string} pkg @param {string} from */
function versionOf(pkg, from) {
  try {
    return String(require(require.resolve(`${pkg}/package.json`, { paths: [from] })).version);
  } catch {
    return "unknown";
  }
}

/** This machine now. @param {string} root the repository (where wrangler and autocannon are installed) @returns {Machine} */
export function describeMachine(root) {
  const cpus = os.cpus();
  const wranglerDir = dirname(require.resolve("wrangler/package.json", { paths: [root] }));
  return {
    date: new Date().toISOString(),
    cpuModel: cpus[0]?.model?.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: os.totalmem() / 2 ** 30,
    os: `${os.type()} ${os.release()}`,
    arch: process.arch,
    node: process.version,
    versions: {
      wrangler: versionOf("wrangler", root),
      workerd: versionOf("workerd", wranglerDir),
      autocannon: versionOf("autocannon", root),
    },
  };
}

/**
 * @param {Machine} m @param {number[]} loadBefore @param {number[]} loadAfter (1, 5, 15 min load averages)
 * @returns {string[]}
 */
export function machineSection(m, loadBefore, loadAfter) {
  const busy = (loadBefore[0] ?? 0) > m.cores;
  return [
    `- Date: ${m.date}`,
    `- CPU: ${m.cpuModel} × ${m.cores} logical cores; memory ${m.memoryGiB.toFixed(1)} GiB; ` +
      `load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(" / ")}, after it ${loadAfter.map((l) => l.toFixed(2)).join(" / ")} (1 / 5 / 15 min)`,
    `- OS: ${m.os} (${m.arch})`,
    `- Node ${m.node}; wrangler ${m.versions.wrangler}; workerd ${m.versions.workerd}; autocannon ${m.versions.autocannon}`,
    `- Client and server on one machine over loopback: autocannon (${CONNECTIONS} connections, pipelining 1) in the bench's Node process,`,
    "  `wrangler dev` (wrangler, its proxy workerd and the Worker's workerd) beside it, state in .wrangler/bench-state.",
    ...(busy
      ? [
          `- **The machine was busy with other work when the run started** (1-min load ${(loadBefore[0] ?? 0).toFixed(2)} on ${m.cores} cores): every case shared`,
          "  the cores with it, so even the ratios are less reliable than on an idle machine.",
        ]
      : []),
  ];
}
