// `npm run bench`, report: GET /messages on a workspace object with a million messages.
import { BUDGET_BYTES_PER_ROW, LIST_FILTER_STATUS, LIST_LIMIT, SEED_NUMBERS } from "../parameters.mjs";
import { BODY_CHARS, HOT_WINDOW_MARGIN_MS, RATE_WINDOW_MARGIN_MS } from "../seed-messages.mjs";
import { f0, f1, f2, mib, pct } from "./format.mjs";

/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {import("../cases/list.mjs").Seed} Seed */

/**
 * GET /messages on the seeded workspace: what was seeded, then the cases as ratios to the restarted runtime's baseline.
 * @param {Seed & { retained: { messages: number, historyDays: number } }} seed @param {CaseRow[]} listResults
 * @param {(r: CaseRow, base: CaseRow) => string} row @param {CaseRow} a (a), the first half's baseline @param {string[]} header
 * @returns {string[]}
 */
export function listSection(seed, listResults, row, a, header) {
  const [a2, e, f, g, a2b] = /** @type {[CaseRow, CaseRow, CaseRow, CaseRow, CaseRow]} */ (listResults);
  const drift = a2b.rps / a2.rps - 1;
  const span = (seed.newest - seed.oldest) / 3_600_000;
  const sh = seed.shapes;
  const outbound = seed.count - sh.inbound;
  const msgBytes = seed.storage.tables.messages ?? 0;
  return [
    `## GET /messages on a workspace object with ${f0(seed.count)} messages`,
    "",
    `After the storage measurement the bench stopped \`wrangler dev\`, wrote **${f0(seed.count)} message records** into the storage`,
    `workspace's SQLite file with \`node:sqlite\` (one transaction, one prepared statement: **${f1(seed.ms / 1000)} s**), and started it again`,
    "on the same state (`scripts/bench/seed-messages.mjs`). The rows are what the object writes (`src/durable-objects/workspace/messages.ts`):",
    `- ${f0(outbound)} outbound over ${SEED_NUMBERS} of the workspace's numbers: ${f0(sh.sent)} sent (no report since), ${f0(sh.delivered)} delivered, ${f0(sh.read)} read, ${f0(sh.failed)} failed`,
    `  while processing, ${f0(sh["failed-after-sent"])} failed after sent (the operator's report); ${f0(sh.inbound)} inbound (received). ${BODY_CHARS}-character bodies,`,
    "  distinct counterparts, ids shaped like the object's (outbound: UUIDv7 of the acceptance day, as `deriveJobId`; inbound: of the",
    "  receipt), the lifecycle times and `version` a settled message has.",
    `- Created over ${f1(span)} hours, the newest ${f0(RATE_WINDOW_MARGIN_MS / 60_000)} min before the seed: inside the 48-hour hot window with ${f0(HOT_WINDOW_MARGIN_MS / 3_600_000)} hours`,
    "  to spare, so the retention alarm moves none of them to history during the run; none in the last minute (the 1200/min window is",
    "  rebuilt from the rows on start) and none queued or processing (the stranded-message check would hand them to their number again).",
    `- The object's bookkeeping about its rows is kept true: \`daily_counts\` gained accepted / sent / failed / received for each of the`,
    `  ${f0(seed.countRows)} (day, number) pairs, marked dirty (D1 has not seen them), so the month's usage counts them. Nothing moved to history,`,
    "  so `history_boundary` and `history_days` stay empty. Not seeded: events and idempotency keys (24 hours each once settled); GET",
    "  /messages reads neither.",
    `- File after seeding: ${mib(seed.storage.bytes)}; \`messages\` with its indexes ${mib(msgBytes)}, **${f0(msgBytes / seed.storage.rows.messages)} B per row** over its`,
    `  ${f0(seed.storage.rows.messages)} rows (docs/architecture.md: ${BUDGET_BYTES_PER_ROW.messages}, ${pct(msgBytes / seed.storage.rows.messages / BUDGET_BYTES_PER_ROW.messages - 1)}; these rows carry the operator's ids at their usual length).`,
    "",
    header[0],
    header[1],
    ...listResults.map((r) => row(r, a2)),
    "",
    "Ratios are to (a2), the baseline measured on the restarted runtime in this run; the last column is to (a) of the first half.",
    `Every answer of (e), (f) and (g) was checked: 200 and exactly the expected ${LIST_LIMIT} ids, in order, computed from the file after seeding`,
    `((e) the ${LIST_LIMIT} newest; (f) the first ${LIST_LIMIT} \`${LIST_FILTER_STATUS}\` among the ${f0(seed.filterScanned)} newest of one number, the rows \`listPage\` reads through`,
    `the number's index before applying the status (its scan budget); (g) messages ${LIST_LIMIT + 1}–${2 * LIST_LIMIT}, after (e)'s \`nextCursor\`): unexpected answers ${f0(
      e.bad + f.bad + g.bad,
    )}.`,
    `The first list request after the restart (the object starts on its ${f0(seed.storage.rows.messages)} rows, then reads the page) took ${f0(seed.firstListMs)} ms.`,
    `After the run the object still held ${f0(seed.retained.messages)} rows and ${f0(seed.retained.historyDays)} days in history: ${
      seed.retained.messages === seed.storage.rows.messages && seed.retained.historyDays === 0
        ? "the retention alarm moved nothing meanwhile"
        : "**rows moved during the measurement: the list cases did not all see the seeded object**"
    }.`,
    "",
    `Drift: (a2') did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a2). (e) ran at ${f2(e.rps / a2.rps)}× (a2)'s req/s (${f2(e.rps / a.rps)}× (a)),`,
    `(f), which reads ${f0(seed.filterScanned)} rows through the number's index to answer ${LIST_LIMIT}, at ${f2(f.rps / a2.rps)}×, (g) at ${f2(g.rps / a2.rps)}×.`,
    "",
  ];
}
