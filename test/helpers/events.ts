import { env } from "cloudflare:workers";
import { vi } from "vitest";
import { eventIdOf, eventsOf, type WebhookEvent, type WebhookQueueMessage } from "../../src/messages/events";
import { type EventKind } from "../../src/messages/status";
import { newUuidV7 } from "../../src/lib/job-id";
import { changesOf, eventOf } from "../../src/durable-objects/workspace/message-events";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { api, json } from "./http";

// Events are not stored (engine v2): each is rebuilt from its message's record, and exists only
// on its way to the queue. Tests observe them as the queue carries them (`queuedEvents`), as the
// customer receives them (the webhook receiver of webhook-net.ts), or as the record determines
// them (`eventsOfMessage`, what a replay rebuilds).

/**
 * The events the webhook queue accepted from now on, in the order they were handed over (packs and
 * single events alike; a send the queue refused carried nothing). Spies on the queue binding, which
 * the Worker and the Durable Objects share with the test (one isolate); `vi.restoreAllMocks` ends
 * the capture, keeping what it saw. The consumer's own re-queues (a pack partly delivered) are
 * captured too: they go through the same binding.
 */
export function queuedEvents(): () => WebhookEvent[] {
  const one = vi.spyOn(env.WEBHOOK_QUEUE, "send");
  const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
  const accepted = (results: { type: string }[], i: number) => results[i]?.type === "fulfilled";
  return () =>
    [
      ...one.mock.calls.map((args, i) => ({
        order: one.mock.invocationCallOrder[i]!,
        ok: accepted(one.mock.settledResults, i),
        bodies: [args[0]],
      })),
      ...batch.mock.calls.map((args, i) => ({
        order: batch.mock.invocationCallOrder[i]!,
        ok: accepted(batch.mock.settledResults, i),
        bodies: [...args[0]].map((m) => m.body),
      })),
    ]
      .filter((c) => c.ok)
      .sort((a, b) => a.order - b.order)
      .flatMap((c) => c.bodies.flatMap((b) => eventsOf(b as WebhookQueueMessage)));
}

/** The `message.status` events of one message among `events`, as `kind@id` strings in order (readable in a diff). */
export const statusEventsOf = (events: WebhookEvent[], messageId: string): WebhookEvent[] =>
  events.filter((e) => e.type === "message.status" && e.data.messageId === messageId);

/**
 * The events a message's record determines, in causal order: what its changes announced and what a
 * replay of each rebuilds (message-events.ts, the workspace's own functions on its stored record,
 * wherever it lives now). Empty when the workspace has no such message.
 */
export async function eventsOfMessage(workspaceId: string, messageId: string): Promise<WebhookEvent[]> {
  const row = await workspaceStub(env, workspaceId).getMessage(messageId);
  return row ? changesOf(row).map((c) => eventOf(workspaceId, row, c)) : [];
}

/** The event of one change of a message, rebuilt from its record (throws if the record has no such change). */
export async function eventOfMessage(workspaceId: string, messageId: string, kind: EventKind): Promise<WebhookEvent> {
  const found = (await eventsOfMessage(workspaceId, messageId)).find((e) => e.id === eventIdOf(messageId, kind));
  if (!found) throw new Error(`message ${messageId} has no ${kind} change`);
  return found;
}

/**
 * A `message.status` (sent) event as the publisher would queue it, about a message that need not
 * exist: what the webhook consumer needs (it reads nothing but the event and the number's webhook).
 * Its id is the one the message's `sent` change has (eventIdOf), its message id a fresh UUIDv7.
 */
export function statusEvent(workspaceId: string, channelNumberId: string, at: number = Date.now()): WebhookEvent {
  const messageId = newUuidV7(at);
  const iso = new Date(at).toISOString();
  return {
    id: eventIdOf(messageId, "sent"),
    type: "message.status",
    workspaceId,
    channelNumberId,
    createdAt: iso,
    data: {
      messageId,
      channelNumberId,
      to: "5511999998888",
      toUserId: null,
      status: "sent",
      previousStatus: "processing",
      upstreamMessageId: "wamid.HBgLNTUxMTk5OTk5ODg4OBUCABEYEjQ",
      error: null,
      deliveredAt: null,
      readAt: null,
      updatedAt: iso,
    },
  };
}

export interface DeliveryView {
  id: string;
  eventId: string;
  eventType: string | null;
  attempt: number;
  nextRetryAt: string | null;
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  outcome: string;
}

/** One page of a webhook's delivery log, as the API lists it (newest first). */
export async function deliveryLogOf(
  key: string,
  webhookId: string,
  query = "",
): Promise<{ data: DeliveryView[]; nextCursor: string | null }> {
  const res = await api(`/webhooks/${webhookId}/deliveries${query}`, key);
  if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${await res.text()}`);
  return json(res);
}

/**
 * Where an event's delivery stands, from its latest attempt in the webhook's log (GET
 * /webhooks/{id}/deliveries): delivered, retrying (failed or refused, a retry due), dead, or
 * undefined when no attempt of it is logged (never tried, or its number had no webhook).
 */
export async function deliveryState(key: string, webhookId: string, eventId: string): Promise<string | undefined> {
  const latest = (await deliveryLogOf(key, webhookId, "?limit=100")).data.find((d) => d.eventId === eventId);
  if (!latest) return undefined;
  if (latest.outcome === "failed" || latest.outcome === "refused")
    return latest.nextRetryAt === null ? latest.outcome : "retrying";
  return latest.outcome;
}
