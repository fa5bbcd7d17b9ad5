import type { Limit } from "../lib/gcra";
import type { BucketSpec } from "../lib/throttle-client";
import type { Actor } from "./actor";

/**
 * Abuse limits of every endpoint except sending (`POST /messages` keeps its
 * exact per-number and per-workspace windows in the Durable Objects). Each is a
 * token bucket: up to `limit` requests at once, refilled continuously at
 * `limit` per `periodSeconds`. Documented in docs/customers/limits.md and docs/security.md;
 * change them there too.
 */
export const ABUSE_LIMITS = {
  /** Every GET under /api/v1 (reads, lists, the delivery log), per API key. */
  read: { limit: 6000, periodSeconds: 60 },
  /** Configuring a webhook (each call resolves the URL's host over DNS), per caller: API key or member. */
  webhookConfigure: { limit: 60, periodSeconds: 60 },
  /** POST /sandbox/inbound (each call produces a webhook event), per API key. */
  sandboxInbound: { limit: 60, periodSeconds: 60 },
  /**
   * Read marks (API v2 `POST /messages/{id}/read`), per workspace: each may call the operator once. As
   * many as sends may be accepted (1200 per minute): one mark per message a business answers.
   */
  readMark: { limit: 1200, periodSeconds: 60 },
  /** Test events (API or dashboard), per webhook. */
  webhookTest: { limit: 5, periodSeconds: 60 },
  /** Replays (API or dashboard), per webhook. */
  webhookReplay: { limit: 60, periodSeconds: 60 },
  /** Test events and replays together, per workspace. */
  webhookTriggers: { limit: 120, periodSeconds: 60 },
  /** New API keys (admin API or dashboard), per workspace: keys are never deleted, only revoked. */
  apiKeyCreate: { limit: 20, periodSeconds: 3600 },
  /** Connecting, re-keying and disconnecting numbers (API or dashboard), per workspace: each may call the operator three times. */
  numberChange: { limit: 30, periodSeconds: 3600 },
  /**
   * Media fetched through from the operator while its copy is made (API or dashboard), per workspace:
   * each is two operator calls with the number's token and up to the plan's item cap of bandwidth.
   * Copies once made are served from R2 under the read limit only.
   */
  mediaFetchThrough: { limit: 60, periodSeconds: 60 },
  /**
   * Uploads to the media store and deletions from it (API v2), per workspace: each upload stores up to
   * 100 MB for 30 days, each deletion removes an R2 object and its row.
   */
  mediaChange: { limit: 60, periodSeconds: 60 },
  /** Adding and removing sandbox test contacts (API or dashboard), per workspace: each change is an audit entry. */
  testContactChange: { limit: 60, periodSeconds: 3600 },
  /** Inviting (or re-inviting), re-roling and removing members (dashboard or admin API), per workspace. */
  memberChange: { limit: 60, periodSeconds: 3600 },
  /** Failed dashboard sign-ins recorded in a workspace's audit log (beyond it, not recorded), per workspace. */
  signInFailureTrace: { limit: 20, periodSeconds: 3600 },
  /** Well-formed API keys that are unknown or revoked (each costs a D1 query), per client address. */
  authFailures: { limit: 30, periodSeconds: 60 },
} as const satisfies Record<string, Limit>;

export type AbuseLimit = keyof typeof ABUSE_LIMITS;

export const bucket = (name: AbuseLimit, suffix?: string): BucketSpec => ({
  name: suffix === undefined ? name : `${name}:${suffix}`,
  ...ABUSE_LIMITS[name],
});

/** Scope names: each is one throttle object. */
export const scopes = {
  apiKey: (keyId: string) => `key:${keyId}`,
  workspace: (workspaceId: string) => `workspace:${workspaceId}`,
  clientAddress: (address: string) => `ip:${address}`,
  /** Limits per caller: an API key keeps its `key:` scope, so its API budgets and these are one object. */
  actor: (actor: Actor) => (actor.type === "api_key" ? `key:${actor.id}` : `${actor.type}:${actor.id}`),
};

/**
 * The per-key bucket of a public API request (`path` relative to /api/v1), or
 * null where the operation applies its own limits: sends, read marks (per workspace), connecting a number
 * (src/features/numbers/connect-number.ts), sandbox test contacts (src/features/sandbox/test-contacts.ts),
 * and webhook configuration (limited per caller in src/features/webhooks/configure-webhook.ts, for the
 * dashboard too). Webhook test events and replays spend a read token here,
 * before their webhook is looked up, so that unknown, foreign and disabled ids
 * are not free; once the webhook is known, its own limits apply as well.
 */
export function perKeyBucket(method: string, path: string): BucketSpec | null {
  if (method === "POST") {
    if (path === "/messages") return null;
    if (path === "/webhooks") return null;
    if (path === "/channel-numbers") return null;
    if (path === "/sandbox/inbound") return bucket("sandboxInbound");
    if (path === "/sandbox/test-contacts") return null;
    if (/^\/messages\/[^/]+\/read$/.test(path)) return null;
  }
  if (method === "DELETE" && path.startsWith("/sandbox/test-contacts/")) return null;
  // GET, test events and replays, and anything else (an unknown route answers 404 but still counts).
  return bucket("read");
}
