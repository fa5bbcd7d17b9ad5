import type { WebhookEvent } from "../../domain/events";
import { log } from "../../lib/log";
import { publishEventPacks } from "../../lib/event-publisher";

/**
 * Number objects used to keep their own event log (inbound messages); inbound
 * messages now live in the workspace object. Storage from before that keeps
 * publishing its leftover events here, then drops the table.
 */
export const hasLegacyEvents = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").toArray().length > 0;

export async function drainLegacyEvents(sql: SqlStorage, queue: Queue): Promise<void> {
  const rows = sql
    .exec<{ id: string; body: string }>(
      "SELECT id, body FROM events WHERE published_at IS NULL ORDER BY created_at, rowid LIMIT 100",
    )
    .toArray();
  if (rows.length === 0) {
    sql.exec("DROP TABLE events");
    return;
  }
  await publishEventPacks(
    queue,
    rows.map((r) => ({ key: r.id, event: JSON.parse(r.body) as WebhookEvent })),
    {
      sent: (ids) => {
        for (const id of ids) sql.exec("UPDATE events SET published_at = ? WHERE id = ?", Date.now(), id);
      },
      setAside: (id, reason) => {
        sql.exec("UPDATE events SET published_at = -1 WHERE id = ?", id);
        log("error", "legacy event set aside", { eventId: id, reason });
      },
    },
  );
}
