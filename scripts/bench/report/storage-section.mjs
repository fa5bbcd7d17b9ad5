// `npm run bench`, report: bytes per message in the workspace object (the storage case).
import { AGREE_WITHIN, BODY_CHARS, BUDGET_BYTES_PER_ROW, STORAGE_NUMBERS } from "../parameters.mjs";
import { f0, f1, f2, mib, pct } from "./format.mjs";

/** @typedef {import("../cases/storage.mjs").StorageMeasure} StorageMeasure */
/** @typedef {import("../cases/list.mjs").Seed} Seed */

/** The b-trees of a slot table, as storageOf names them, with what each holds. */
const SLOT_BTREES = /** @type {const} */ ([
  ["records", "the records (`WITHOUT ROWID`, key = id)"],
  ["_to", "index `_to` (recipient, id)"],
  ["_key", "index `_key` (idem_key, unique)"],
  ["_work", "index `_work` (channel_number_id, id) where pending = 1"],
  ["_failed", "index `_failed` (id) where status = failed"],
]);

/**
 * Whether a measured figure agrees with the engine's own bound, and how finely it was measured.
 * @param {string} what @param {number} perRow @param {number} budget @param {number} resolution relative
 */
function verdict(what, perRow, budget, resolution) {
  const diff = perRow / budget - 1;
  const agreement =
    Math.abs(diff) <= AGREE_WITHIN
      ? "they agree"
      : diff < 0
        ? "they do not agree: the bound is higher than measured (on the safe side)"
        : "they do NOT agree: the bound is LOWER than measured";
  return `${what} ${f0(perRow)} B against ${budget} (${pct(diff)}; resolution ±${f0(resolution * 100)}%, whole pages): ${agreement}`;
}

/**
 * Bytes per message in the workspace object, from its file before and after the storage sends.
 * @param {StorageMeasure} st @param {Seed} seed @returns {string[]}
 */
export function storageSection(st, seed) {
  const { before, after, sends } = st;
  const records = after.slots.rows - before.slots.rows;
  const slotGrowth = after.slots.bytes - before.slots.bytes;
  const logRows = after.deliveries.rows - before.deliveries.rows;
  const attempts = (after.deliveries.attempts ?? 0) - (before.deliveries.attempts ?? 0);
  const logGrowth = after.deliveries.bytes - before.deliveries.bytes;
  const growth = after.bytes - before.bytes;
  const perMessage = growth / sends;
  const perRecord = records > 0 ? slotGrowth / records : null;
  const perAttempt = attempts > 0 ? logGrowth / attempts : null;
  const attemptsPerMessage = attempts / sends;
  const expectedPerMessage = BUDGET_BYTES_PER_ROW.record + attemptsPerMessage * BUDGET_BYTES_PER_ROW.attempt;
  const others = Object.keys({ ...before.others, ...after.others }).sort();
  const otherBytes = (/** @type {typeof before} */ s) => others.reduce((sum, t) => sum + (s.others[t]?.bytes ?? 0), 0);
  const otherGrowth = otherBytes(after) - otherBytes(before);
  /** @param {number | null} n */
  const per = (n) => (n === null ? "–" : f0(n));
  const slotRows = SLOT_BTREES.map(([b, what]) => {
    const grew = (after.slots.btrees[b] ?? 0) - (before.slots.btrees[b] ?? 0);
    return `| ${what} | ${f0(before.slots.btrees[b] ?? 0)} | ${f0(after.slots.btrees[b] ?? 0)} | ${f0(grew)} | per record | ${per(records > 0 ? grew / records : null)} | |`;
  });
  // Every b-tree grows by whole pages: that is the resolution of a figure.
  const slotResolution = (SLOT_BTREES.length * after.pageSize) / Math.max(1, slotGrowth);
  const logResolution = after.pageSize / Math.max(1, logGrowth);
  const seeded = seed.storage.slots;
  const seededPerRecord = seeded.rows > 0 ? seeded.bytes / seeded.rows : 0;
  return [
    "## Storage: bytes per message in the workspace object",
    "",
    `Measured on the storage workspace (its own, ${STORAGE_NUMBERS} sandbox numbers, each with a webhook to a receiver of the bench's that`,
    "accepts every delivery) through its object's SQLite file in the bench state (`.wrangler/bench-state/v3/do/…-WorkspaceDurableObject/`,",
    "found as the file whose slot table holds the record of one of its sends), read with `node:sqlite` read-only beside the running",
    "object (the file is in WAL mode): page count × page size, which is what `ctx.storage.sql.databaseSize` reports, and the bytes",
    "of each table and index (`dbstat`).",
    `Before: after one send to each number, all sent, their events delivered and logged. After: ${f0(sends)} more accepted sends`,
    `(${BODY_CHARS}-character bodies, ${f0(st.rps)}/s round-robin over the numbers), all called by the sandbox operator, their events`,
    `delivered to the receiver and every delivery logged (${f1(st.deliveryMs / 1000)} s after the last send, the last change; the receiver took ${f0(st.deliveries)} deliveries`,
    `of ${f0(st.eventIds)} distinct events in the whole case). Records live in 6-hour slot tables \`m_<slot>\` (${after.slotTables} table(s) at the end),`,
    `the delivery log in day tables \`d_<day>\` (${after.deliveryTables}), one row per number per report of the webhook consumer.`,
    "",
    "| b-tree | bytes before | bytes after | growth | rows | bytes per row added | engine's bound |",
    "| --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ...slotRows,
    `| **slot tables \`m_<slot>\`** (the table and its 4 indexes) | ${f0(before.slots.bytes)} | ${f0(after.slots.bytes)} | ${f0(slotGrowth)} | ${f0(before.slots.rows)} → ${f0(after.slots.rows)} records (+${f0(records)}) | **${per(perRecord)} per record** | ~${BUDGET_BYTES_PER_ROW.record} |`,
    `| **delivery log \`d_<day>\`** | ${f0(before.deliveries.bytes)} | ${f0(after.deliveries.bytes)} | ${f0(logGrowth)} | ${f0(before.deliveries.rows)} → ${f0(after.deliveries.rows)} rows (+${f0(logRows)}), ${f0(before.deliveries.attempts ?? 0)} → ${f0(after.deliveries.attempts ?? 0)} attempts (+${f0(attempts)}) | **${per(logRows > 0 ? logGrowth / logRows : null)} per row, ${per(perAttempt)} per attempt** | ~${BUDGET_BYTES_PER_ROW.attempt} per attempt |`,
    `| other tables (${others.map((t) => `\`${t}\``).join(", ") || "none"}) | ${f0(otherBytes(before))} | ${f0(otherBytes(after))} | ${f0(otherGrowth)} | – | – | – |`,
    `| **whole file** (page count × ${after.pageSize} B; free pages ${f0(before.freePages)} → ${f0(after.freePages)}) | ${f0(before.bytes)} | ${f0(after.bytes)} | ${f0(growth)} | ${f0(sends)} messages | **${f0(perMessage)} per message** | ${f0(expectedPerMessage)} for this mix |`,
    "",
    `- Per message, everything included: **${f0(perMessage)} B** (the file grew ${mib(growth)} for ${f0(sends)} messages). The engine's`,
    `  bounds for the same rows give ${f0(expectedPerMessage)} B: one record (~${BUDGET_BYTES_PER_ROW.record}) and ${f2(attemptsPerMessage)} logged delivery attempts`,
    `  (~${BUDGET_BYTES_PER_ROW.attempt} each): ${pct(perMessage / expectedPerMessage - 1)}. Nothing else is written per message: events are derived from the`,
    "  record (no events table), the Idempotency-Key is a column of the record, counts are derived from the slot tables.",
    `- Per table: ${perRecord === null ? "slot tables: no record added" : verdict("a record with its index entries", perRecord, BUDGET_BYTES_PER_ROW.record, slotResolution)}; ${
      perAttempt === null
        ? "delivery log: no attempt logged"
        : verdict("a logged attempt", perAttempt, BUDGET_BYTES_PER_ROW.attempt, logResolution)
    }.`,
    "- The sandbox accepts each call, then reports the message failed a second later (131047: these recipients never wrote to the",
    `  number), so a message has 3 events here (\`processing\`, \`sent\`, \`failed\`: ${f2(st.eventIds / (STORAGE_NUMBERS + sends))} per message over the case); the`,
    `  receiver accepts each at the first attempt, so the log holds ${f2(attemptsPerMessage)} attempts per message in ${f0(logRows)} rows (${f1(logRows > 0 ? attempts / logRows : 0)} attempts a`,
    "  row: one row per number per consumer report, and with 100 numbers a report rarely holds two events of one number). A",
    "  failing endpoint logs one attempt per try.",
    "- `_work` holds a record only while its number has work for it (`pending = 1`): empty once every message is settled, as",
    "  here; `_failed` only failed records (all of them here).",
    "- These messages carry the sandbox's message id (`sandbox.` and the jobId, 44 characters) and no delivery or read time. The",
    `  ${f0(seed.count)} records seeded for the next section carry the operator's ids (55 characters) and a mix of delivered, read, failed and`,
    `  inbound messages: the slot tables hold **${f0(seededPerRecord)} B per record** over them (${pct(
      seededPerRecord / BUDGET_BYTES_PER_ROW.record - 1,
    )} against ~${BUDGET_BYTES_PER_ROW.record}).`,
    "",
  ];
}
