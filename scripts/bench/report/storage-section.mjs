// `npm run bench`, report: bytes per message in the workspace object (the storage case).
import { AGREE_WITHIN, BUDGET_BYTES_PER_ROW, STORAGE_NUMBERS } from "../parameters.mjs";
import { BODY_CHARS } from "../seed-messages.mjs";
import { f0, f1, f2, mib, pct } from "./format.mjs";

/** @typedef {import("../cases/storage.mjs").StorageMeasure} StorageMeasure */
/** @typedef {import("../cases/list.mjs").Seed} Seed */

/**
 * Bytes per message in the workspace object, from its file before and after the storage sends.
 * @param {StorageMeasure} st @param {Seed} seed @returns {string[]}
 */
export function storageSection(st, seed) {
  const { before, after, sends } = st;
  /** @param {string} t */
  const grew = (t) => (after.tables[t] ?? 0) - (before.tables[t] ?? 0);
  /** @param {string} t */
  const added = (t) => after.rows[t] - before.rows[t];
  const growth = after.bytes - before.bytes;
  const perMessage = growth / sends;
  const eventsPerMessage = added("events") / sends;
  const expectedPerMessage =
    BUDGET_BYTES_PER_ROW.messages +
    eventsPerMessage * BUDGET_BYTES_PER_ROW.events +
    BUDGET_BYTES_PER_ROW.idempotency_keys;
  const named = ["messages", "events", "idempotency_keys", "event_attempts", "daily_counts"];
  const others = Object.keys({ ...before.tables, ...after.tables }).filter((t) => !named.includes(t));
  const otherGrowth = others.reduce((sum, t) => sum + grew(t), 0);
  /** @param {string} label @param {string} t @param {number | string} budget */
  const row = (label, t, budget) => {
    const n = added(t);
    const perRow = n > 0 ? grew(t) / n : null;
    return `| ${label} | ${f0(before.tables[t] ?? 0)} | ${f0(after.tables[t] ?? 0)} | ${f0(grew(t))} | ${f0(before.rows[t])} → ${f0(after.rows[t])} (+${f0(n)}) | ${perRow === null ? "–" : f0(perRow)} | ${budget ?? "–"} |`;
  };
  /** @param {keyof typeof BUDGET_BYTES_PER_ROW} t */
  const verdict = (t) => {
    const n = added(t);
    if (n === 0) return `${t}: no rows added`;
    const perRow = grew(t) / n;
    const diff = perRow / BUDGET_BYTES_PER_ROW[t] - 1;
    // Each of the table's b-trees grows by whole pages: that is the resolution of the figure.
    const btrees = t === "messages" ? 9 : t === "events" ? 5 : 2;
    const resolution = (btrees * after.pageSize) / grew(t);
    const agreement =
      Math.abs(diff) <= AGREE_WITHIN
        ? "they agree"
        : diff < 0
          ? "they do not agree: the budget is higher than measured (on the safe side)"
          : "they do NOT agree: the budget is LOWER than measured";
    return `${t} ${f0(perRow)} B/row against ${BUDGET_BYTES_PER_ROW[t]} (${pct(diff)}; resolution ±${f0(resolution * 100)}%, whole pages in ${btrees} b-trees): ${agreement}`;
  };
  return [
    "## Storage: bytes per message in the workspace object",
    "",
    `Measured on the storage workspace (its own, ${STORAGE_NUMBERS} sandbox numbers) through its object's SQLite file in the bench state`,
    "(`.wrangler/bench-state/v3/do/…-WorkspaceDurableObject/`, found by the `workspace_id` in its `meta`), read with `node:sqlite`",
    "read-only beside the running object (the file is in WAL mode): page count × page size, which is what",
    "`ctx.storage.sql.databaseSize` reports, and the bytes of each table with its indexes (`dbstat`).",
    `Before: after one send to each number, all sent and every event reported. After: ${f0(sends)} more accepted sends`,
    `(${BODY_CHARS}-character bodies, ${f0(st.rps)}/s round-robin over the numbers), all sent by the sandbox upstream and every event`,
    `reported (${f1(st.deliveryMs / 1000)} s after the last send).`,
    "",
    "| table (with its indexes) | bytes before | bytes after | growth | rows | bytes per row added | docs/architecture.md |",
    "| --- | ---: | ---: | ---: | --- | ---: | ---: |",
    row("`messages` (8 indexes)", "messages", BUDGET_BYTES_PER_ROW.messages),
    row("`events` (4 indexes)", "events", BUDGET_BYTES_PER_ROW.events),
    row("`idempotency_keys` (1 index)", "idempotency_keys", BUDGET_BYTES_PER_ROW.idempotency_keys),
    row("`event_attempts` (2 indexes)", "event_attempts", 271),
    row("`daily_counts` (1 index)", "daily_counts", "~60"),
    `| other tables (meta, history, schema) | ${f0(others.reduce((s, t) => s + (before.tables[t] ?? 0), 0))} | ${f0(others.reduce((s, t) => s + (after.tables[t] ?? 0), 0))} | ${f0(otherGrowth)} | – | – | – |`,
    `| **whole file** (page count × ${after.pageSize} B; free pages ${f0(before.freePages)} → ${f0(after.freePages)}) | ${f0(before.bytes)} | ${f0(after.bytes)} | ${f0(growth)} | ${f0(sends)} messages | **${f0(perMessage)} per message** | ${f0(expectedPerMessage)} for this mix |`,
    "",
    `- Per message, everything included: **${f0(perMessage)} B** (the file grew ${mib(growth)} for ${f0(sends)} messages). The budget's`,
    `  figures for the same rows give ${f0(expectedPerMessage)} B: one message (${BUDGET_BYTES_PER_ROW.messages}), ${f2(eventsPerMessage)} events`,
    `  (${BUDGET_BYTES_PER_ROW.events} each) and one idempotency key (${BUDGET_BYTES_PER_ROW.idempotency_keys}): ${pct(perMessage / expectedPerMessage - 1)}.`,
    `- Per table: ${verdict("messages")}; ${verdict("events")}; ${verdict("idempotency_keys")}.`,
    `- The sandbox reports no delivery or read, so each message has ${f2(eventsPerMessage)} events here (\`processing\`, \`sent\`) where`,
    "  the budget plans 3–4; the storage workspace has no webhook, so no delivery attempts (`event_attempts`) are written.",
    "- These messages carry the sandbox's upstream id (`sandbox.` and the jobId, 44 characters) and no delivery or read time. The",
    `  ${f0(seed.count)} rows seeded for the next section carry the operator's ids (55 characters), a mix of delivered, read, failed and`,
    `  inbound messages: \`messages\` with its indexes holds **${f0((seed.storage.tables.messages ?? 0) / seed.storage.rows.messages)} B per row** over them (${pct(
      (seed.storage.tables.messages ?? 0) / seed.storage.rows.messages / BUDGET_BYTES_PER_ROW.messages - 1,
    )} against ${BUDGET_BYTES_PER_ROW.messages}).`,
    "",
  ];
}
