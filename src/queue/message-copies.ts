import type { MessageCopy } from "../domain/message";

/**
 * Upserts a batch of message copies into D1 in one transaction. A copy only
 * overwrites an older version, so redelivery and reordering are harmless.
 */
export async function writeMessageCopies(db: D1Database, copies: MessageCopy[]): Promise<void> {
  if (copies.length === 0) return;
  const stmt = db.prepare(
    `INSERT INTO messages (id, workspace_id, channel_number_id, recipient, type, body, status, upstream_message_id,
                           error_code, error_message, created_at, updated_at, delivered_at, read_at, version)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET
       status = excluded.status, upstream_message_id = excluded.upstream_message_id,
       error_code = excluded.error_code, error_message = excluded.error_message,
       updated_at = excluded.updated_at, delivered_at = excluded.delivered_at, read_at = excluded.read_at,
       version = excluded.version
     WHERE excluded.version > messages.version`,
  );
  await db.batch(
    copies.map((m) =>
      stmt.bind(
        m.id,
        m.workspaceId,
        m.channelNumberId,
        m.to,
        m.type,
        m.body,
        m.status,
        m.upstreamMessageId,
        m.errorCode,
        m.errorMessage,
        m.createdAt,
        m.updatedAt,
        m.deliveredAt,
        m.readAt,
        m.version,
      ),
    ),
  );
}

export async function consumeMessageCopies(batch: MessageBatch<MessageCopy>, env: Env): Promise<void> {
  try {
    await writeMessageCopies(env.DB, batch.messages.map((m) => m.body));
    batch.ackAll();
  } catch {
    // The whole batch is one transaction: nothing was written, so all of it comes back.
    batch.retryAll({ delaySeconds: 5 });
  }
}
