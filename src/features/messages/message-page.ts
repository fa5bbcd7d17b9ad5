import type { Message } from "../../messages/message";
import { decodeMessageCursor, encodeMessageCursor, type MessageFilter } from "../../messages/list";
import { listMessagesAs } from "../../engine/messages";
import { toMessageView, type MessageRow } from "../../messages/record";

export interface MessagePage {
  /** At most the page's `limit`, newest first. */
  messages: Message[];
  /** Where the next (older) page starts; null when nothing older matches. */
  nextCursor: string | null;
}

/**
 * A page of the workspace's messages, newest first, from `cursor` (a `nextCursor` this returned,
 * or none): the one listing of `GET /messages` (every version, each with its own filters) and of
 * the dashboard's Messages page. The workspace object reads a bounded number of rows per call, so
 * a selective filter can come back short, even empty, while older matches exist; `calls` is how
 * many calls a page may make from where the last one stopped before it answers with what it has.
 */
export async function listMessagePage(
  env: Env,
  workspaceId: string,
  filter: MessageFilter,
  query: { cursor?: string | undefined; limit: number },
  calls = 1,
): Promise<MessagePage> {
  return listMessagePageAs(env, workspaceId, filter, query, toMessageView, calls);
}

/** `listMessagePage`, shown by another version's view (`view`: messages/message-v2.ts, say). */
export async function listMessagePageAs<V>(
  env: Env,
  workspaceId: string,
  filter: MessageFilter,
  query: { cursor?: string | undefined; limit: number },
  view: (row: MessageRow) => V,
  calls = 1,
): Promise<{ messages: V[]; nextCursor: string | null }> {
  let position = await decodeMessageCursor(workspaceId, query.cursor);
  const messages: V[] = [];
  for (let call = 0; call < calls && messages.length < query.limit; call++) {
    const page = await listMessagesAs(env, workspaceId, filter, position, query.limit - messages.length, view);
    messages.push(...page.messages);
    position = page.next;
    if (!position) break;
  }
  return { messages, nextCursor: position ? await encodeMessageCursor(workspaceId, position) : null };
}
