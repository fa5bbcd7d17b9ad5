import type { WebhookEvent, WebhookQueueMessage } from "../domain/events";
import { now } from "../lib/clock";

// Events are written in the same transaction as the change they describe, then
// published to the webhook queue by the object's alarm. So a change and its event
// commit together, and a failed publish is retried without creating a second event.
const PUBLISH_BATCH = 100;
const KEEP_PUBLISHED_MS = 7 * 24 * 60 * 60 * 1000;

export function createEventLogTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS events (
      id TEXT PRIMARY KEY, type TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
      created_at INTEGER NOT NULL, published_at INTEGER);
    CREATE INDEX IF NOT EXISTS events_unpublished ON events (created_at) WHERE published_at IS NULL;
  `);
}

/** Call inside the transaction that makes the change. `subject` is the message the event is about. */
export function recordEvent(sql: SqlStorage, event: WebhookEvent, subject: string): void {
  sql.exec(
    "INSERT INTO events (id, type, subject, body, created_at) VALUES (?, ?, ?, ?, ?)",
    event.id,
    event.type,
    subject,
    JSON.stringify(event),
    now(),
  );
}

export const hasUnpublishedEvents = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM events WHERE published_at IS NULL LIMIT 1").toArray().length > 0;

/** Sends every unpublished event to the webhook queue, a batch at a time. Throws if the queue refuses. */
export async function publishEvents(sql: SqlStorage, queue: Queue): Promise<void> {
  for (;;) {
    // Insertion order (rowid) breaks ties: two changes in one millisecond keep their order.
    const rows = sql
      .exec<{ id: string; body: string }>("SELECT id, body FROM events WHERE published_at IS NULL ORDER BY created_at, rowid LIMIT ?", PUBLISH_BATCH)
      .toArray();
    if (rows.length === 0) break;
    const messages: MessageSendRequest<WebhookQueueMessage>[] = rows.map((r) => ({ body: { event: JSON.parse(r.body) as WebhookEvent } }));
    await queue.sendBatch(messages);
    const at = now();
    for (const r of rows) sql.exec("UPDATE events SET published_at = ? WHERE id = ?", at, r.id);
  }
  sql.exec("DELETE FROM events WHERE published_at IS NOT NULL AND published_at < ?", now() - KEEP_PUBLISHED_MS);
}

/** The recorded events about one subject, oldest first (operator view and tests). */
export function eventsAbout(sql: SqlStorage, subject: string): WebhookEvent[] {
  return sql
    .exec<{ body: string }>("SELECT body FROM events WHERE subject = ? ORDER BY created_at, rowid", subject)
    .toArray()
    .map((r) => JSON.parse(r.body) as WebhookEvent);
}
