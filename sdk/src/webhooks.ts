import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { webhooks } from "./generated/openapi.js";
import type { webhooks as webhooksV2 } from "./generated/openapi-v2.js";

/** The events we POST to your webhook, discriminated by `type`. */
export type WebhookEvent = {
  [K in keyof webhooks]: webhooks[K]["post"]["requestBody"]["content"]["application/json"];
}[keyof webhooks];
export type WebhookEventType = WebhookEvent["type"];

/**
 * The events a webhook configured through API v2 (`POST /api/v2/webhooks`) receives: in
 * `message.status`, `delivered` and `read` are statuses of their own.
 */
export type WebhookEventV2 = {
  [K in keyof webhooksV2]: webhooksV2[K]["post"]["requestBody"]["content"]["application/json"];
}[keyof webhooksV2];

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const SIGNATURE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

function signatureHeaders(headers: WebhookHeaders): Record<string, string> {
  const get = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
    return Array.isArray(entry) ? entry.join(" ") : entry;
  };
  const out: Record<string, string> = {};
  for (const name of SIGNATURE_HEADERS) {
    const value = get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Verifies a delivery (Standard Webhooks: HMAC-SHA256, timestamp within 5 minutes) and
 * returns its event. `payload` is the raw body exactly as received: verify before parsing.
 * Throws `WebhookVerificationError` when the signature or the timestamp is wrong.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  return new Webhook(secret).verify(body, signatureHeaders(headers)) as WebhookEvent;
}

/** `verifyWebhook` for a webhook configured through API v2: the event in v2's shapes. */
export function verifyWebhookV2(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEventV2 {
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  return new Webhook(secret).verify(body, signatureHeaders(headers)) as WebhookEventV2;
}

export { WebhookVerificationError };
