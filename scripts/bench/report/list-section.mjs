// `npm run bench`, report: GET /messages on a workspace object with a million messages.
import { BODY_CHARS, BUDGET_BYTES_PER_ROW, LIST_FILTER_STATUS, LIST_LIMIT, SEED_NUMBERS } from "../parameters.mjs";
import { f0, f1, f2, mib, pct } from "./format.mjs";

/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {import("../cases/list.mjs").Seed} Seed */
/** @typedef {ReturnType<typeof import("../workspace-file.mjs").retentionState>} Retained */

/**
 * GET /messages on the seeded workspace: what was seeded, then the cases as ratios to the baseline measured before them.
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
    `After the storage measurement the bench wrote **${f0(seed.count)} message records** into a workspace of their own (${SEED_NUMBERS} numbers,`,
    `no other record) through its own Worker entry (\`bench/worker.ts\`, \`POST /bench/seed\`, ${f0(seed.count / 20_000)} calls of 20,000 records, one`,
    `transaction each: **${f1(seed.ms / 1000)} s**). The object writes them with production's own code (\`bench/seed.ts\`): a text send's insert,`,
    "then the status transitions of its call and the operator's reports (one claim, answered: off the number's work list), or the",
    "operator webhook's inbound insert, with production's job ids, inbound ids and error codes; no schema is restated outside `src/`.",
    `- ${f0(outbound)} outbound: ${f0(sh.sent ?? 0)} sent (no report since), ${f0(sh.delivered ?? 0)} delivered, ${f0(sh.read ?? 0)} read, ${f0(sh.failed ?? 0)} failed`,
    `  while processing, ${f0(sh["failed-after-sent"] ?? 0)} failed after sent (the operator's report); ${f0(sh.inbound ?? 0)} inbound (received). ${BODY_CHARS}-character bodies,`,
    "  distinct counterparts, 55-character operator ids.",
    `- Created over ${f1(span)} hours (${f0(seed.storage.slotTables)} slot tables), the newest 5 min before the seed: the hot tables of a busy`,
    "  workspace, all younger than the 48 hours after which an object over its byte budget moves slots to history, and none in",
    "  the 1200/min window. Not seeded: the delivery log (3 days); GET /messages does not read it.",
    `- File after seeding: ${mib(seed.storage.bytes)}; the slot tables with their indexes ${mib(slots.bytes)}, **${f0(perRecord)} B per record** over`,
    `  their ${f0(slots.rows)} records (the engine's bound: ~${BUDGET_BYTES_PER_ROW.record}, ${pct(perRecord / BUDGET_BYTES_PER_ROW.record - 1)}).`,
    "",
    header[0],
    header[1],
    ...listResults.map((r) => row(r, a2)),
    "",
    "Ratios are to (a2), the baseline measured right before the list cases; the last column is to (a) of the first half.",
    `Every answer of (e), (f) and (g) was checked: 200 and exactly the expected ${LIST_LIMIT} ids, in order, from the seed's own account of`,
    `its newest records ((e) the ${LIST_LIMIT} newest; (f) the first ${LIST_LIMIT} \`${LIST_FILTER_STATUS}\` records of one number, a filter without an index of`,
    `its own, read by id up to the page's scan budget; (g) messages ${LIST_LIMIT + 1}–${2 * LIST_LIMIT}, after (e)'s \`nextCursor\`): unexpected answers ${f0(e.bad + f.bad + g.bad)}.`,
    `The first list request after the seed took ${f0(seed.firstListMs)} ms.`,
    `After the run the object still held ${f0(seed.retained.records)} records in ${f0(seed.retained.slotTables)} slot tables and ${f0(seed.retained.historyDays)} days moved or archived: ${
      intact
        ? "the tiering steps moved nothing meanwhile"
        : "**records moved during the measurement: the list cases did not all see the seeded object**"
    }.`,
    "",
    `Drift: (a2') did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a2). (e) ran at ${f2(e.rps / a2.rps)}× (a2)'s req/s (${f2(e.rps / a.rps)}× (a)),`,
    `(f) at ${f2(f.rps / a2.rps)}×, (g) at ${f2(g.rps / a2.rps)}×.`,
    "",
  ];
}
