import type { InboundContact, InboundRecord, IdentityMove } from "../messages/inbound";
import type { StatusUpdate, UnmatchedReport } from "../messages/status";
import { numberObject, workspaceObject } from "./objects";

// What the operator tells about messages (its status reports, inbound messages), applied to the
// objects: the workspace's records first, then what the number learns from them (windows, aliases).

/** The operator's reports about messages of a workspace; returns once committed (their events owed). */
export async function applyStatuses(env: Env, workspaceId: string, updates: StatusUpdate[]): Promise<void> {
  await workspaceObject(env, workspaceId).applyStatuses(updates);
}

/** The recipients a number learnt the operator's ids of recipients for (an alias: another number of the same user). */
export const recipientsKnownAs = (env: Env, numberId: string, waIds: string[]): Promise<Record<string, string[]>> =>
  numberObject(env, numberId).recipientsKnownAs(waIds);

/** The messages reports without our jobId are about, each by its jobId, or null when none is found. */
export const matchReports = (
  env: Env,
  workspaceId: string,
  numberId: string,
  reports: UnmatchedReport[],
): Promise<(string | null)[]> => workspaceObject(env, workspaceId).matchReports(numberId, reports);

/** An inbound message as recorded, and what it tells its number: a window to open, or an identity change. */
export interface ReceivedMessage {
  record: InboundRecord;
  contact: InboundContact | null;
  moves: IdentityMove[];
}

/**
 * Inbound messages to one number: recorded once each by the workspace (each announced with a
 * `message.received` event), then told to the number (the senders' windows, identity changes).
 * Returns our message ids, in order.
 */
export async function receiveMessages(
  env: Env,
  number: { id: string; workspaceId: string },
  messages: readonly ReceivedMessage[],
): Promise<string[]> {
  const ids = await workspaceObject(env, number.workspaceId).recordInbound(
    number.workspaceId,
    messages.map((m) => m.record),
  );
  const contacts = messages.flatMap((m) => (m.contact ? [m.contact] : []));
  const moves = messages.flatMap((m) => m.moves);
  const stub = numberObject(env, number.id);
  if (contacts.length > 0) await stub.noteInbound(number.id, contacts);
  if (moves.length > 0) await stub.noteIdentityChanges(number.id, moves);
  return ids;
}
