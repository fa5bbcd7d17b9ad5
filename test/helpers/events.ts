import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { WebhookEvent } from "../../src/domain/events";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { PUBLISH_CURSOR, findEvent, recordEvent } from "../../src/durable-objects/workspace/event-log";
import { setMeta } from "../../src/durable-objects/shared/meta";

/**
 * Puts an event in its workspace's event log as already published: the state
 * a queue message of the webhook consumer comes from. Tests then hand the
 * consumer batches of such events themselves.
 */
export async function publishedEvent(event: WebhookEvent): Promise<WebhookEvent> {
  await runInDurableObject(workspaceStub(env, event.workspaceId), (_, state) => {
    const sql = state.storage.sql;
    const subject =
      event.type === "message.status" || event.type === "message.received" ? event.data.messageId : event.id;
    recordEvent(sql, event, subject, Date.now(), 0);
    const last = sql.exec<{ r: number }>("SELECT MAX(rowid) AS r FROM events").one().r;
    setMeta(sql, PUBLISH_CURSOR, String(last));
  });
  return event;
}

/** The delivery state the workspace keeps for an event: pending, retrying, delivered, dead, no_webhook, set_aside. */
export const deliveryState = (workspaceId: string, eventId: string) =>
  runInDurableObject(
    workspaceStub(env, workspaceId),
    (_, state) => findEvent(state.storage.sql, eventId)?.delivery ?? undefined,
  );
