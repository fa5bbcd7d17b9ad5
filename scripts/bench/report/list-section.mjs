// `npm run bench`, report: GET /messages on a workspace object with a million messages.
import { BUDGET_BYTES_PER_ROW, LIST_FILTER_STATUS, LIST_LIMIT, SEED_NUMBERS } from "../parameters.mjs";
import { BODY_CHARS, RATE_WINDOW_MARGIN_MS } from "../seed-messages.mjs";
import { SCAN_BUDGET } from "../slots.mjs";
import { f0, f1, f2, mib, pct } from "./format.mjs";

/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {import("../cases/list.mjs").Seed} Seed */
/** @typedef {ReturnType<typeof import("../workspace-file.mjs").retentionState>} Retained */

/**
 * GET /messages on the seeded workspace: what was seeded, then the cases as ratios to the restarted runtime's baseline.
 * @param {Seed & { retained: Retained }} seed @param {CaseRow[]} listResults
 * @param {(r: CaseRow, base: CaseRow) => string} row @param {CaseRow} a (a), the first half's baseline @param {string[]} header
 * @returns {string[]}
 */
export function listSection(seed, listResults, row, a, header) {
  const [a2, e, f, g, a2b] = /** @type {[CaseRow, CaseRow, CaseRow, CaseRow, CaseRow]} */ (listResults);
  const drift = a2b.rps / a2.rps - 1;
  const span = (seed.newest - seed.oldest) / 3_600_000;
  const sh = seed.shapes;
  const outbound = seed.count - sh.inbound;
  const slots = seed.storage.slots;
  const perRecord = slots.rows > 0 ? slots.bytes / slots.rows : 0;
  const intact =
    seed.retained.records === slots.rows &&
    seed.retained.slotTables === seed.storage.slotTables &&
    seed.retained.historyDays === 0;
  return [
    `## GET /messages on a workspace object with ${f0(seed.count)} messages`,
    "",
    `After the storage measurement the bench stopped \`wrangler dev\`, wrote **${f0(seed.count)} message records** into the storage`,
    `workspace's SQLite file with \`node:sqlite\` (one transaction, one prepared statement per slot table: **${f1(seed.ms / 1000)} s**), and started`,
    "it again on the same state (`scripts/bench/seed-messages.mjs`). The records are what the object writes",
    "(`src/durable-objects/workspace/records.ts`), each in the 6-hour slot table of its id (`m_<slot>`, created as the object creates it):",
    `- ${f0(outbound)} outbound over ${SEED_NUMBERS} of the workspace's numbers: ${f0(sh.sent)} sent (no report since), ${f0(sh.delivered)} delivered, ${f0(sh.read)} read, ${f0(sh.failed)} failed`,
    `  while processing, ${f0(sh["failed-after-sent"])} failed after sent (the operator's report); ${f0(sh.inbound)} inbound (received). ${BODY_CHARS}-character bodies,`,
    "  distinct counterparts, ids shaped like the object's (outbound: UUIDv7 of the acceptance time with random bits, as `newJobId`;",
    "  inbound: of the operator's time in whole seconds), the lifecycle times of a settled message, its Idempotency-Key and",
    "  fingerprint, one claim made and answered, and `pending = 0`: none is queued, processing or in a number's work list (the",
    "  number rebuilds its queue from `pending = 1` after a restart and would send it).",
    `- Created over ${f1(span)} hours (${f0(seed.slotTables)} slot tables), the newest ${f0(RATE_WINDOW_MARGIN_MS / 60_000)} min before the seed: the hot tables of a busy`,
    "  workspace, all younger than the 48 hours after which an object over its byte budget moves slots to history, so the tiering",
    "  step moves none of them during the run; none in the last minute (the 1200/min window is rebuilt from the records on start).",
    "- The object's bookkeeping needs nothing more: counts are derived from the slot tables (the object counts a slot when it first",
    "  needs it, and ships the recent days to D1 after its restart), the day ledger stays empty (nothing moved or archived). Not",
    "  seeded: the delivery log (3 days); GET /messages does not read it.",
    `- File after seeding: ${mib(seed.storage.bytes)}; the slot tables with their indexes ${mib(slots.bytes)}, **${f0(perRecord)} B per record** over`,
    `  their ${f0(slots.rows)} records (the engine's bound: ~${BUDGET_BYTES_PER_ROW.record}, ${pct(perRecord / BUDGET_BYTES_PER_ROW.record - 1)}; these records carry the operator's ids at their usual length).`,
    "",
    header[0],
    header[1],
    ...listResults.map((r) => row(r, a2)),
    "",
    "Ratios are to (a2), the baseline measured on the restarted runtime in this run; the last column is to (a) of the first half.",
    `Every answer of (e), (f) and (g) was checked: 200 and exactly the expected ${LIST_LIMIT} ids, in order, computed from the file after seeding`,
    `as the object reads its slot tables ((e) the ${LIST_LIMIT} newest; (f) the first ${LIST_LIMIT} \`${LIST_FILTER_STATUS}\` records of one number among the newest records,`,
    `read by id up to the page's scan budget (${f0(SCAN_BUDGET)} rows): neither filter has an index of its own, so the object read ${f0(seed.filterScanned)} rows for it;`,
    `(g) messages ${LIST_LIMIT + 1}–${2 * LIST_LIMIT}, after (e)'s \`nextCursor\`): unexpected answers ${f0(e.bad + f.bad + g.bad)}.`,
    `The first list request after the restart (the object starts on its ${f0(slots.rows)} records, then reads the page) took ${f0(seed.firstListMs)} ms.`,
    `After the run the object still held ${f0(seed.retained.records)} records in ${f0(seed.retained.slotTables)} slot tables and ${f0(seed.retained.historyDays)} days moved or archived: ${
      intact
        ? "the tiering steps moved nothing meanwhile"
        : "**records moved during the measurement: the list cases did not all see the seeded object**"
    }.`,
    "",
    `Drift: (a2') did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a2). (e) ran at ${f2(e.rps / a2.rps)}× (a2)'s req/s (${f2(e.rps / a.rps)}× (a)),`,
    `(f), which reads ${f0(seed.filterScanned)} rows to answer ${LIST_LIMIT}, at ${f2(f.rps / a2.rps)}×, (g) at ${f2(g.rps / a2.rps)}×.`,
    "",
  ];
}
