import { DAY_MS } from "../../lib/job-id";
import { linksOf, userIdOf } from "../../messages/inbound-details";
import { slotOf, slotTable, type SlotTables } from "./day-tables";

/**
 * How far back a reply or a reaction is matched to our record of the message it names. Users
 * answer recent messages; an older one keeps only the operator's id (`messageId: null`).
 */
export const LINK_LOOKUP_MS = 7 * DAY_MS;

/**
 * How far back an operator status report without our jobId is matched to our record by the
 * operator's id of the message: the operator holds a message for an offline user for up to 30
 * days, so its delivery or failure may be reported that late (one more day for the UTC slots).
 */
export const STATUS_LOOKUP_MS = 31 * DAY_MS;

/**
 * Our id of the message the operator calls `operatorId`, among the records exchanged with one of
 * `counterparts` (the sender's phone number and user id) in the `withinMs` before `at` (a reply or
 * a reaction: LINK_LOOKUP_MS), newest slot first. A reply, a reaction or a status report is about a
 * message of one conversation, so the counterpart index of a slot table (`_to`: recipient, id; a
 * table of fewer than INDEX_MIN_RECORDS records has none and is read whole) finds it without an
 * index of its own: nothing is written for it, and a lookup reads one index range per slot that
 * has a table (that conversation's records). Records already moved to history (a workspace over
 * its storage budget) or older are not found.
 */
export function findByOperatorId(
  tables: SlotTables,
  sql: SqlStorage,
  counterparts: readonly string[],
  operatorId: string,
  at: number,
  withinMs: number = LINK_LOOKUP_MS,
): string | null {
  for (let slot = slotOf(at); slot >= slotOf(at - withinMs); slot--) {
    if (!tables.has(slot)) continue;
    const t = slotTable(slot);
    for (const who of counterparts) {
      const row = sql
        .exec<{ id: string }>(
          `SELECT id FROM ${t}${tables.hasIndexes(slot) ? ` INDEXED BY ${t}_to` : ""} WHERE recipient = ? AND upstream_message_id = ? LIMIT 1`,
          who,
          operatorId,
        )
        .toArray()[0];
      if (row) return row.id;
    }
  }
  return null;
}

/**
 * An inbound message's details with the messages it replies or reacts to resolved to our ids (null
 * where not found), looked up in the conversation with its sender (`from`, and their user id).
 */
export function resolveLinks(
  tables: SlotTables,
  sql: SqlStorage,
  m: { from: string; at: number; details: Record<string, unknown> },
): Record<string, unknown> {
  const { details } = m;
  const { replyTo, reaction } = linksOf(details);
  if (!replyTo && !reaction) return details;
  const userId = userIdOf(details);
  const counterparts = userId !== undefined && userId !== m.from ? [m.from, userId] : [m.from];
  const find = (operatorId: string) => findByOperatorId(tables, sql, counterparts, operatorId, m.at);
  const out: Record<string, unknown> = { ...details };
  if (replyTo) out.replyTo = { ...replyTo, messageId: replyTo.messageId ?? find(replyTo.upstreamMessageId) };
  if (reaction) out.reaction = { ...reaction, messageId: reaction.messageId ?? find(reaction.upstreamMessageId) };
  return out;
}
