// `npm run bench`: what makes a run fail (exit code 1), whatever its figures.

/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */

/**
 * @param {{ results: CaseRow[], listResults: CaseRow[], seed: { storage: { slotTables: number, slots: { rows: number } },
 *   retained: { records: number, slotTables: number, historyDays: number } } }} run
 * @returns {string[]} one line per problem; none for a good run
 */
export function runProblems({ results, listResults, seed }) {
  const [a, b] = /** @type {[CaseRow, CaseRow]} */ (results);
  /** @type {string[]} */
  const problems = [];
  for (const r of [...results, ...listResults]) {
    if (r.non2xx > 0) problems.push(`${r.label} had ${r.non2xx} non-2xx responses: ${JSON.stringify(r.statuses)}`);
    if (r.errors > 0 || r.timeouts > 0)
      problems.push(`${r.label} had ${r.errors} connection errors and ${r.timeouts} timeouts`);
    if (r.bad > 0) problems.push(`${r.label} had ${r.bad} responses that were not the expected answer`);
  }
  if (b.statuses["429"]) problems.push(`(b) was rate limited ${b.statuses["429"]} times: the pacing is wrong`);
  if (a.d1PerRequest === null) problems.push("no Server-Timing header: the D1 statement count is missing");
  const { retained, storage } = seed;
  if (
    retained.records !== storage.slots.rows ||
    retained.slotTables !== storage.slotTables ||
    retained.historyDays !== 0
  ) {
    problems.push(
      `the seeded object changed during the list cases: ${JSON.stringify(retained)}, seeded ${storage.slots.rows} records in ${storage.slotTables} slot tables`,
    );
  }
  return problems;
}
