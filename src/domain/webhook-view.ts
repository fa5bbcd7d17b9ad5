import { z } from "@hono/zod-openapi";

export const WebhookDelivery = z
  .object({
    id: z.string().uuid(),
    eventId: z.string().openapi({ description: "The event's `webhook-id`; the same on every attempt and replay." }),
    eventType: z.string().nullable(),
    attempt: z
      .number()
      .int()
      .openapi({ description: "Attempt number within the delivery run (a replay starts a new run at 1)." }),
    nextRetryAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({ description: "After a failed attempt: when the next one is due." }),
    attemptedAt: z.string().datetime(),
    statusCode: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "HTTP status your endpoint answered, if it answered." }),
    latencyMs: z.number().int().nullable(),
    error: z.string().nullable(),
    outcome: z.enum(["delivered", "failed", "refused", "dead"]).openapi({
      description:
        "`refused`: the URL failed the SSRF check at delivery time. `dead`: retries ran out after the previous attempt.",
    }),
  })
  .openapi("WebhookDelivery");

const DELIVERY_OUTCOMES = ["delivered", "failed", "refused", "dead"] as const;

/** A UUID-shaped id for an attempt, from its webhook's id and its sequence number in the workspace's log. */
const attemptId = (webhookId: string, seq: number): string =>
  `${webhookId.slice(0, 24)}${seq.toString(16).padStart(12, "0").slice(-12)}`;

/** An attempt of the delivery log as the workspace's object stores it, and as the API and the dashboard render it. */
export interface AttemptRow {
  seq: number;
  event_id: string;
  event_type: string | null;
  subject: string;
  webhook_id: string;
  attempt: number;
  attempted_at: number;
  outcome: string;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  next_retry_at: number | null;
  [key: string]: SqlStorageValue;
}

export const toDeliveryView = (webhookId: string, row: AttemptRow): z.infer<typeof WebhookDelivery> => ({
  id: attemptId(webhookId, row.seq),
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: row.attempt,
  nextRetryAt: row.next_retry_at === null ? null : new Date(row.next_retry_at).toISOString(),
  attemptedAt: new Date(row.attempted_at).toISOString(),
  statusCode: row.status_code,
  latencyMs: row.latency_ms,
  error: row.error,
  outcome: DELIVERY_OUTCOMES.find((o) => o === row.outcome) ?? "failed",
});

/**
 * A webhook URL as viewers and the audit log see it: scheme and host only. Customers sometimes
 * put a token in the path or query of their endpoint; whoever may not change
 * the webhook has no need to read it.
 */
export function redactWebhookUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname === "/" && u.search === "" ? u.origin + "/" : `${u.origin}/…`;
  } catch {
    return "…";
  }
}
