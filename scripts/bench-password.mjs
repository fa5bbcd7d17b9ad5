#!/usr/bin/env node
// `npm run bench`, last part: the CPU time of one dashboard password hash
// (argon2id, m = 19 MiB, t = 2, p = 1, @noble/hashes: the library and
// parameters of src/lib/password.ts), measured in this Node's V8, the engine
// workerd runs too. Sign-in, setting a password and changing it each cost one
// hash; an unknown email costs one as well (the dummy hash). Writes
// bench/password.md.
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { argon2id } from "@noble/hashes/argon2.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "bench", "password.md");
const PARAMS = { m: 19_456, t: 2, p: 1, dkLen: 32, version: 0x13 };
const RUNS = 7;

const salt = new Uint8Array(16).fill(7);
argon2id("warm-up password", salt, PARAMS);

const cpu = [];
const wall = [];
for (let i = 0; i < RUNS; i++) {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  argon2id(`a password of run ${i}`, salt, PARAMS);
  wall.push(performance.now() - w0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
const sorted = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b);
const median = (/** @type {number[]} */ xs) => sorted(xs)[Math.floor(xs.length / 2)] ?? NaN;
const fmt = (/** @type {number} */ ms) => `${ms.toFixed(0)} ms`;

const lines = [
  "# Password hash cost (dashboard sign-in)",
  "",
  `argon2id m=${PARAMS.m} KiB, t=${PARAMS.t}, p=${PARAMS.p} with @noble/hashes (pure JavaScript), ${RUNS} runs in Node ${process.version}`,
  `on ${process.platform}/${process.arch}:`,
  "",
  `- CPU time of one hash: median ${fmt(median(cpu))} (min ${fmt(sorted(cpu)[0] ?? NaN)}, max ${fmt(sorted(cpu).at(-1) ?? NaN)})`,
  `- wall time of one hash: median ${fmt(median(wall))}`,
  "",
  "Every sign-in attempt that is not throttled costs one hash (an unknown email too: it is checked against a dummy hash),",
  "and so do setting a password from an invitation and changing it. That is far above the Workers Free plan's 10 ms of CPU",
  "per request: the dashboard's sign-in needs Workers Paid (30 s of CPU per request by default). Throttling (10 attempts per",
  "email and 50 per client IP in 15 minutes) bounds what an attacker can make us spend.",
  "",
];
const text = lines.join("\n");
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, text);
console.log(text);
console.log(`[bench] wrote ${OUT.slice(ROOT.length + 1)}`);
