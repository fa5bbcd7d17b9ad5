// `npm run bench`, report: this run's send ratios against an earlier run's on this machine (.wrangler/bench-baseline.json,
// written by `--save-baseline`; not committed: bench/results.md is the one result file).
import { f0, f2, pct } from "./format.mjs";

/** A case's req/s and p99 as ratios to (a) of the same run. @typedef {{ rps: number, p99: number }} Ratio */
/** .wrangler/bench-baseline.json. @typedef {{ source?: string, drift?: number, ratios?: Record<string, Ratio> }} Baseline */

/**
 * This run's send ratios against .wrangler/bench-baseline.json, with the drift of both runs as the noise bound.
 * @param {Baseline | null} baseline @param {Record<string, Ratio>} ratios @param {number} drift
 * @returns {string[]}
 */
export function baselineSection(baseline, ratios, drift) {
  if (!baseline)
    return [
      "## Send ratios against an earlier run",
      "",
      "No earlier run saved on this machine (`--save-baseline`): nothing to compare with.",
      "",
    ];
  const bound = Math.max(Math.abs(drift), Math.abs(baseline.drift ?? 0));
  /** @type {string[]} */
  const verdicts = [];
  const lines = Object.entries(ratios).map(([label, now]) => {
    const was = baseline.ratios?.[label];
    if (!was) return `| ${label} | – | ${f2(now.rps)} | – | – | ${f2(now.p99)} | – |`;
    const dRps = now.rps / was.rps - 1;
    const dP99 = now.p99 / was.p99 - 1;
    const within = Math.abs(dRps) <= bound;
    verdicts.push(`${label} ${within ? "unchanged within noise" : `**changed beyond the noise** (${pct(dRps)})`}`);
    return `| ${label} | ${f2(was.rps)} | ${f2(now.rps)} | ${pct(dRps)} | ${f2(was.p99)} | ${f2(now.p99)} | ${pct(dP99)} |`;
  });
  return [
    "## Send ratios against an earlier run (`.wrangler/bench-baseline.json`)",
    "",
    `Baseline: ${baseline.source ?? "unknown"} (drift in that run ${f0(Math.abs(baseline.drift ?? 0) * 100)}%). Only ratios to (a) of the same run are compared.`,
    "",
    "| case | req/s ÷ (a), baseline | this run | change | p99 ÷ (a), baseline | this run | change |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...lines,
    "",
    `Noise bound: the larger drift of the two runs ((a') against (a)), ${f0(bound * 100)}%: a req/s ratio that moved less than that is`,
    `unchanged within noise. Verdict (req/s): ${verdicts.join("; ")}. p99 ratios are noisier still (one slow request in a`,
    "hundred sets them) and are shown, not judged.",
    "",
  ];
}
