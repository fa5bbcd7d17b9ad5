import { findByUuid } from "../lib/job-id";
import { readMarkOf, type ReadMark } from "../messages/read-mark";
import type { NormalizedError } from "../messages/status";
import { numberObject, workspaceObject } from "./objects";

/** What marking a message read came to. */
export type MarkReadOutcome =
  | { kind: "marked"; mark: ReadMark }
  /** No message of the workspace has this id. */
  | { kind: "not_found" }
  /** The message is one the business sent: only a user's message can be marked read. */
  | { kind: "outbound" }
  /** The message's number is disconnected: nothing can be marked with it. */
  | { kind: "disconnected" }
  | { kind: "refused"; error: NormalizedError };

/**
 * Marks an inbound message read at the operator (with the typing indicator if `typing`), through
 * its number's object, which holds the credentials. A message already marked answers its mark
 * without a call: the mark is on the record (`read_at`), written after the operator took it.
 */
export async function markRead(env: Env, workspaceId: string, id: string, typing: boolean): Promise<MarkReadOutcome> {
  const workspace = workspaceObject(env, workspaceId);
  const row = await findByUuid(id, (stored) => workspace.getMessage(stored));
  if (!row) return { kind: "not_found" };
  if (row.direction !== "inbound" || row.upstream_message_id === null) return { kind: "outbound" };
  const marked = (readAt: number, typingIndicator: boolean): MarkReadOutcome => ({
    kind: "marked",
    mark: { messageId: row.id, readAt: new Date(readAt).toISOString(), typingIndicator },
  });
  if (row.read_at !== null) return marked(row.read_at, readMarkOf(row).typingIndicator);
  const outcome = await numberObject(env, row.channel_number_id).markRead({
    upstreamMessageId: row.upstream_message_id,
    typing,
  });
  if (outcome.kind !== "marked") return outcome;
  // The record as the first mark left it (a concurrent one may have been first); a record that moved
  // to history keeps no mark, and this call's is the answer.
  const noted = await workspace.noteReadMark(row.id, outcome.at, typing);
  return noted?.read_at != null ? marked(noted.read_at, readMarkOf(noted).typingIndicator) : marked(outcome.at, typing);
}
