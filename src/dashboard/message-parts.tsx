import { getNumberById, type ChannelNumberRow } from "../db/channel-numbers";
import type { Message } from "../messages/message";
import { toMessageViewV2, type MessageV2 } from "../messages/message-v2";
import { toMessageView, type MessageRow } from "../messages/record";
import { previewText } from "./message-kinds";

// Pieces of a message shared by the messages list and a message's page.

/** The other party: the recipient of an outbound message, the sender of an inbound one (a user id when no phone number is known). */
export const counterpartOf = (m: Message): string =>
  (m.direction === "outbound" ? (m.to ?? m.toUserId) : (m.from ?? m.fromUserId)) ?? "";

const PREVIEW_CHARS = 80;

/** The start of the message's text or summary (whole characters): message-kinds.tsx's `previewText`. */
export function preview(m: MessageV2): string {
  const text = previewText(m);
  const chars = Array.from(text);
  return chars.length > PREVIEW_CHARS ? `${chars.slice(0, PREVIEW_CHARS - 1).join("")}…` : text;
}

/**
 * A record as the dashboard shows it: v1's view for the record's facts and statuses (what the
 * pages always showed), and v2's for what a rich kind carried (its type and its object).
 */
export interface ShownMessage {
  m: Message;
  v2: MessageV2;
}

export const shownMessage = (row: MessageRow): ShownMessage => ({ m: toMessageView(row), v2: toMessageViewV2(row) });

const STATUS_CLASS: Record<Message["status"], string> = {
  queued: "pending",
  processing: "pending",
  sent: "ok",
  failed: "bad",
  received: "ok",
};

/**
 * The status as a word, with what a customer acts on beside it: the error
 * code of a failure, "outcome unknown" while the operator's answer is
 * missing, and the operator's later delivery and read reports.
 */
export function StatusLine({ m }: { m: Message }) {
  if (m.direction === "inbound") return <span class={STATUS_CLASS.received}>received</span>;
  const after = m.readAt ? "read" : m.deliveredAt ? "delivered" : null;
  return (
    <>
      <span class={STATUS_CLASS[m.status]}>{m.status}</span>
      {after && m.status === "sent" ? <span class="small-inline"> · {after}</span> : null}
      {m.status === "failed" && m.error ? (
        <>
          {" "}
          <code class="small-inline">{m.error.code}</code>
        </>
      ) : null}
      {m.outcomeUnknownSince ? (
        <>
          {" "}
          <span class="badge warn">outcome unknown</span>
        </>
      ) : null}
    </>
  );
}

export type NumberLabels = Map<string, { display: string; connected: boolean }>;

/** Display numbers by id for the numbers these messages went through, disconnected ones included. */
export async function numberLabels(
  db: D1Database,
  workspaceId: string,
  connected: ChannelNumberRow[],
  ids: string[],
): Promise<NumberLabels> {
  const labels: NumberLabels = new Map(
    connected.map((n) => [n.id, { display: n.display_phone_number, connected: true }]),
  );
  const missing = [...new Set(ids)].filter((id) => !labels.has(id));
  const found = await Promise.all(missing.map((id) => getNumberById(db, id)));
  for (const n of found)
    if (n && n.workspace_id === workspaceId)
      labels.set(n.id, { display: n.display_phone_number, connected: n.status === "connected" });
  return labels;
}

/** A number by its display number, linked to its page while it is connected. */
export function NumberLink({ id, labels }: { id: string; labels: NumberLabels }) {
  const label = labels.get(id);
  if (!label) return <code>{id}</code>;
  return label.connected ? (
    <a href={`/dashboard/numbers/${id}`}>{label.display}</a>
  ) : (
    <span>{label.display} (disconnected)</span>
  );
}
