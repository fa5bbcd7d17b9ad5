// `npm run bench`, last part: the CPU time of one dashboard password hash (argon2id, m = 19 MiB, t = 2,
// p = 1, @noble/hashes: the library and parameters of src/lib/password.ts), measured in this Node's V8,
// the engine workerd runs too. Writes bench/password.md.
import { argon2id } from "@noble/hashes/argon2.js";
import { machine, percentile, writeResult } from "./lib/run.ts";

const PARAMS = { m: 19_456, t: 2, p: 1, dkLen: 32, version: 0x13 };
const RUNS = 7;
const salt = new Uint8Array(16).fill(7);
argon2id("warm-up password", salt, PARAMS);
const cpu: number[] = [];
const wall: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  argon2id(`a password of run ${i}`, salt, PARAMS);
  wall.push(performance.now() - w0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
const ms = (x: number | null | undefined) => `${(x ?? NaN).toFixed(0)} ms`;
writeResult("password.md", [
  "# Password hash cost (dashboard sign-in)",
  "",
  `argon2id m=${PARAMS.m} KiB, t=${PARAMS.t}, p=${PARAMS.p} with @noble/hashes (pure JavaScript), ${RUNS} runs (${machine()}):`,
  "",
  `- CPU time of one hash: median ${ms(percentile(cpu, 50))} (min ${ms(Math.min(...cpu))}, max ${ms(Math.max(...cpu))})`,
  `- wall time of one hash: median ${ms(percentile(wall, 50))}`,
  "",
  "What it means for sign-in and the Workers plans: bench/README.md.",
]);
