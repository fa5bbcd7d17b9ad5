import { config } from "../config";
import { envelopeOf, type WebhookEvent, type WebhookQueueMessage } from "../domain/events";
import { markWebhookFailingStatement, markWebhookHealthyStatement, webhooksForNumbers, type WebhookRow } from "../db/webhooks";
import { workspaceStub } from "../durable-objects/stubs";
import type { DeliveryReport } from "../durable-objects/workspace/contract";
import { now } from "../lib/clock";
import { errorText, log } from "../lib/log";
import { openWebhookSecret } from "../lib/sealed-secrets";
import { checkWebhookUrl, type UrlCheck } from "../webhooks/ssrf";
import { signatureHeaders } from "../webhooks/signature";
import { categorizeNetworkError, describeNetworkError } from "../webhooks/network-error";

/**
 * Delay before the next attempt after attempt N (`message.attempts`) failed:
 * at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Eight retries match
 * `max_retries = 8` in wrangler.toml: when the ninth attempt fails, the queue
 * moves the message to the dead-letter queue.
 */
export const RETRY_DELAYS_SECONDS = [0, 5, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;

/** A webhook whose failures have lasted longer than this is disabled. */
export const DISABLE_AFTER_MS = 72 * 60 * 60 * 1000;

const MAX_ERROR_CHARS = 500;
const USER_AGENT = "messaging-gateway-webhooks/1";

export function retryDelaySeconds(attempts: number, schedule: readonly number[] = RETRY_DELAYS_SECONDS): number {
  const index = Math.min(Math.max(attempts, 1), schedule.length) - 1;
  return schedule[index] ?? schedule[schedule.length - 1] ?? 0;
}

/** WEBHOOK_RETRY_DELAYS_SECONDS shortens the schedule for local soak runs; production uses the default. */
const retrySchedule = (env: Env): readonly number[] => config(env).webhooks.retryDelaysSeconds ?? RETRY_DELAYS_SECONDS;

interface Attempt {
  outcome: "delivered" | "failed" | "refused";
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
}

type Result = { kind: "no_webhook" } | { kind: "attempted"; webhook: WebhookRow; attempt: Attempt };

const iso = (ms: number): string => new Date(ms).toISOString();
const clip = (text: string): string => (text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text);

/** One signed POST of the event to the webhook's URL; never throws. */
async function attemptDelivery(event: WebhookEvent, webhook: WebhookRow, secret: Promise<string>, env: Env): Promise<Attempt> {
  const startedAt = now();
  const failure = (outcome: Attempt["outcome"], error: string, statusCode: number | null = null, latencyMs: number | null = null): Attempt => ({
    outcome,
    attemptedAt: iso(startedAt),
    statusCode,
    latencyMs,
    error: clip(error),
  });

  // DNS may have changed since the URL was accepted: check it again, every attempt.
  let check: UrlCheck;
  try {
    check = await checkWebhookUrl(webhook.url, {
      allowInsecure: config(env).webhooks.allowInsecureUrls,
      dohResolverUrl: config(env).webhooks.dohResolverUrl,
    });
  } catch (err) {
    log("error", "webhook URL check failed", { webhookId: webhook.id, detail: errorText(err) });
    return failure("failed", "Could not check the URL's host (an internal error); it will be retried.");
  }
  if (!check.ok) return failure("refused", `URL refused: ${check.reason}`);

  const body = JSON.stringify(envelopeOf(event));
  let headers: Record<string, string>;
  try {
    headers = {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      ...(await signatureHeaders(await secret, event.id, Math.floor(now() / 1000), body)),
    };
  } catch (err) {
    log("error", "webhook secret could not be opened", { webhookId: webhook.id, detail: errorText(err) });
    return failure("failed", "Internal error while signing the event; it will be retried.");
  }
  const timeoutMs = config(env).webhooks.timeoutMs;
  const sent = now();
  try {
    const res = await fetch(check.url.href, {
      method: "POST",
      headers,
      body,
      // A redirect could point anywhere, including inside a network: never follow it.
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const latencyMs = now() - sent;
    await res.body?.cancel();
    if (res.status >= 200 && res.status < 300) {
      return { outcome: "delivered", attemptedAt: iso(startedAt), statusCode: res.status, latencyMs, error: null };
    }
    const location = res.headers.get("location");
    const error =
      res.status >= 300 && res.status < 400
        ? `Redirect (HTTP ${res.status}${location ? ` to ${location}` : ""}) not followed: answer with a 2xx.`
        : `HTTP ${res.status}: the endpoint did not answer with a 2xx.`;
    return failure("failed", error, res.status, latencyMs);
  } catch (err) {
    const latencyMs = now() - sent;
    const category = categorizeNetworkError(err);
    if (category === "timeout") return failure("failed", `Timed out after ${timeoutMs} ms.`, null, latencyMs);
    // Only the category reaches the customer; the runtime's message stays in our logs.
    log("info", "webhook network error", { webhookId: webhook.id, category, detail: errorText(err) });
    return failure("failed", describeNetworkError(category), null, latencyMs);
  }
}

/**
 * What this batch means for each webhook's health in D1, written only when it
 * changes: a success ends a failure streak, a failure starts one (or, past
 * DISABLE_AFTER_MS, disables the webhook). A healthy webhook costs no D1 write.
 */
function healthStatements(db: D1Database, results: Result[], at: number): D1PreparedStatement[] {
  const byWebhook = new Map<string, { webhook: WebhookRow; delivered: boolean }>();
  for (const r of results) {
    if (r.kind !== "attempted") continue;
    const seen = byWebhook.get(r.webhook.id);
    byWebhook.set(r.webhook.id, { webhook: r.webhook, delivered: (seen?.delivered ?? false) || r.attempt.outcome === "delivered" });
  }
  const disableBefore = iso(at - DISABLE_AFTER_MS);
  const statements: D1PreparedStatement[] = [];
  for (const { webhook, delivered } of byWebhook.values()) {
    if (delivered && webhook.failing_since !== null) statements.push(markWebhookHealthyStatement(db, webhook));
    if (!delivered && (webhook.failing_since === null || webhook.failing_since < disableBefore)) {
      statements.push(markWebhookFailingStatement(db, webhook, iso(at), disableBefore));
    }
  }
  return statements;
}

/** Hands each workspace object the outcome of its events' attempts (one call per workspace). */
async function reportToWorkspaces(env: Env, events: WebhookEvent[], reports: DeliveryReport[]): Promise<void> {
  const byWorkspace = Map.groupBy(reports, (_, i) => events[i]!.workspaceId);
  await Promise.all(
    [...byWorkspace].map(async ([workspaceId, list]) => {
      try {
        await workspaceStub(env, workspaceId).recordDeliveries(list);
      } catch (err) {
        // The customer-facing outcome already happened. Unreported events are published
        // again later by their workspace (a duplicate the customer deduplicates on webhook-id).
        log("error", "delivery outcomes could not be reported to the workspace", { workspaceId, detail: errorText(err) });
      }
    }),
  );
}

/**
 * Consumer of `webhook-deliveries`: one signed attempt per message, all of the
 * batch in parallel (one number's events in queue order), then the outcomes go
 * to the workspace objects (the delivery log) and health changes to D1. Failures
 * are retried on the schedule of RETRY_DELAYS_SECONDS; events whose number has
 * no enabled webhook are acked and recorded as `no_webhook` (replayable).
 */
export async function consumeWebhookDeliveries(batch: MessageBatch<WebhookQueueMessage>, env: Env): Promise<void> {
  const events = batch.messages.map((m) => m.body.event);
  const webhooks = new Map(
    (await webhooksForNumbers(env.DB, [...new Set(events.map((e) => e.channelNumberId))])).map((w) => [w.channel_number_id, w]),
  );
  const secrets = new Map<string, Promise<string>>();
  const secretOf = (w: WebhookRow): Promise<string> => {
    let s = secrets.get(w.id);
    if (!s) {
      secrets.set(w.id, (s = openWebhookSecret(env, w)));
      // An attempt refused before signing never awaits it: its failure must not go unhandled.
      s.catch(() => undefined);
    }
    return s;
  };

  const resultOf = async (event: WebhookEvent): Promise<Result> => {
    const webhook = webhooks.get(event.channelNumberId);
    if (!webhook || webhook.status !== "enabled" || webhook.workspace_id !== event.workspaceId) return { kind: "no_webhook" };
    return { kind: "attempted", webhook, attempt: await attemptDelivery(event, webhook, secretOf(webhook), env) };
  };
  // One number's events go out one after another in queue order, so that a
  // status change usually arrives after the one before it (best effort: a retry
  // can still overtake); different numbers are served in parallel.
  const results: Result[] = [];
  const byNumber = Map.groupBy(events.keys(), (i) => events[i]!.channelNumberId);
  await Promise.all(
    [...byNumber.values()].map(async (indexes) => {
      for (const i of indexes) results[i] = await resultOf(events[i]!);
    }),
  );

  const at = now();
  const schedule = retrySchedule(env);
  const reports: DeliveryReport[] = batch.messages.map((message, i) => {
    const result = results[i]!;
    if (result.kind === "no_webhook") {
      return { eventId: events[i]!.id, webhookId: null, attempt: message.attempts, attemptedAt: at, outcome: "no_webhook", statusCode: null, latencyMs: null, error: null, nextRetryAt: null };
    }
    const { attempt } = result;
    const retryIn = attempt.outcome === "delivered" ? null : retryDelaySeconds(message.attempts, schedule);
    return {
      eventId: events[i]!.id,
      webhookId: result.webhook.id,
      attempt: message.attempts,
      attemptedAt: Date.parse(attempt.attemptedAt),
      outcome: attempt.outcome,
      statusCode: attempt.statusCode,
      latencyMs: attempt.latencyMs,
      error: attempt.error,
      nextRetryAt: retryIn === null ? null : at + retryIn * 1000,
    };
  });

  const health = healthStatements(env.DB, results, at);
  await Promise.all([
    reportToWorkspaces(env, events, reports),
    health.length === 0
      ? Promise.resolve()
      : env.DB.batch(health).then(
          () => undefined,
          (err: unknown) => log("error", "webhook health could not be written", { detail: errorText(err) }),
        ),
  ]);

  batch.messages.forEach((message, i) => {
    const result = results[i]!;
    if (result.kind === "no_webhook") {
      log("info", "webhook event without an enabled webhook", { eventId: events[i]!.id, channelNumberId: events[i]!.channelNumberId });
      message.ack();
    } else if (result.attempt.outcome === "delivered") {
      message.ack();
    } else {
      const delaySeconds = retryDelaySeconds(message.attempts, schedule);
      log("warn", "webhook delivery failed", {
        eventId: events[i]!.id,
        webhookId: result.webhook.id,
        attempt: message.attempts,
        outcome: result.attempt.outcome,
        statusCode: result.attempt.statusCode,
        retryInSeconds: delaySeconds,
      });
      message.retry({ delaySeconds });
    }
  });
}

/**
 * Consumer of `webhook-deliveries-dlq`: events whose retries ran out. Each
 * workspace records them `dead`, with a `dead` entry in the webhook's delivery log.
 */
export async function consumeDeadWebhookDeliveries(batch: MessageBatch<WebhookQueueMessage>, env: Env): Promise<void> {
  const events = batch.messages.map((m) => m.body.event);
  const webhooks = new Map(
    (await webhooksForNumbers(env.DB, [...new Set(events.map((e) => e.channelNumberId))])).map((w) => [w.channel_number_id, w]),
  );
  const at = now();
  const reports: DeliveryReport[] = batch.messages.map((m) => ({
    eventId: m.body.event.id,
    webhookId: webhooks.get(m.body.event.channelNumberId)?.id ?? null,
    attempt: m.attempts,
    attemptedAt: at,
    outcome: "dead",
    statusCode: null,
    latencyMs: null,
    error: "Retries exhausted: the event was dead-lettered. Replay it from the delivery log once the endpoint works.",
    nextRetryAt: null,
  }));
  const byWorkspace = Map.groupBy(reports, (_, i) => events[i]!.workspaceId);
  try {
    await Promise.all([...byWorkspace].map(([workspaceId, list]) => workspaceStub(env, workspaceId).recordDeliveries(list)));
    batch.ackAll();
  } catch (err) {
    log("error", "dead webhook events could not be recorded", { detail: errorText(err) });
    batch.retryAll({ delaySeconds: 30 });
  }
}
