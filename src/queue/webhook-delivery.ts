import { config } from "../config";
import { envelopeOf, eventsOf, triedOf, type WebhookEvent, type WebhookQueueMessage } from "../messages/events";
import {
  markWebhookFailingStatement,
  markWebhookHealthyStatement,
  webhooksForNumbers,
  type WebhookRow,
} from "../features/webhooks/store";
import { recordDeliveries, type DeliveryReport } from "../engine/webhooks";
import { now } from "../lib/clock";
import { errorText, log } from "../lib/log";
import { openWebhookSecret } from "../lib/sealed-secrets";
import { checkWebhookUrl, type UrlCheck } from "../webhooks/ssrf";
import { signatureHeaders } from "../webhooks/signature";
import { categorizeNetworkError, describeNetworkError } from "../webhooks/network-error";
import { DISABLE_AFTER_MS } from "../domain/webhook-health";

/**
 * Delay before the next attempt after attempt N (`message.attempts`) failed:
 * at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Eight retries match
 * `max_retries = 8` in wrangler.toml: when the ninth attempt fails, the queue
 * moves the message to the dead-letter queue.
 */
export const RETRY_DELAYS_SECONDS = [0, 5, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;

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

type Result =
  | { kind: "no_webhook" }
  | { kind: "attempted"; webhook: WebhookRow; attempt: Attempt }
  | { kind: "deferred"; webhook: WebhookRow };

const iso = (ms: number): string => new Date(ms).toISOString();
const clip = (text: string): string =>
  text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text;

/** One signed POST of the event to the webhook's URL; never throws. */
async function attemptDelivery(
  event: WebhookEvent,
  webhook: WebhookRow,
  secret: Promise<string>,
  env: Env,
): Promise<Attempt> {
  const startedAt = now();
  const failure = (
    outcome: Attempt["outcome"],
    error: string,
    statusCode: number | null = null,
    latencyMs: number | null = null,
  ): Attempt => ({
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

  // The shapes of the API version the webhook was configured through.
  const body = JSON.stringify(envelopeOf(event, webhook.api_version));
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
    byWebhook.set(r.webhook.id, {
      webhook: r.webhook,
      delivered: (seen?.delivered ?? false) || r.attempt.outcome === "delivered",
    });
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
async function reportToWorkspaces(env: Env, reports: { workspaceId: string; report: DeliveryReport }[]): Promise<void> {
  const byWorkspace = Map.groupBy(reports, (r) => r.workspaceId);
  await Promise.all(
    [...byWorkspace].map(async ([workspaceId, items]) => {
      const list = items.map((i) => i.report);
      try {
        await recordDeliveries(env, workspaceId, list);
      } catch (err) {
        // The customer-facing outcome already happened. Unreported events are published
        // again later by their workspace (a duplicate the customer deduplicates on webhook-id).
        log("error", "delivery outcomes could not be reported to the workspace", {
          workspaceId,
          detail: errorText(err),
        });
      }
    }),
  );
}

/** One event of a queue message, with the number its attempt has in this run (if it is attempted). */
interface Entry {
  message: Message<WebhookQueueMessage>;
  event: WebhookEvent;
  attempt: number;
}

/** What to do with one queue message once its events were tried. */
type Disposition =
  | { kind: "ack" }
  | { kind: "retry"; delaySeconds: number }
  /** Some of its events still need delivering: they go back to the queue as a pack of their own, the rest is done. */
  | { kind: "requeue"; events: WebhookEvent[]; tried: number[]; delaySeconds: number }
  | { kind: "dead"; entries: Entry[] };

/**
 * Attempts per event before it is dead: the first and `max_retries = 8` more
 * (wrangler.toml), after which the queue dead-letters a message it retried.
 */
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

const DEAD_ERROR =
  "Retries exhausted: the event was dead-lettered. Replay it from the delivery log once the endpoint works.";

/** What the delivery log keys an event's attempts by: its type, number and subject (the message it is about, or itself). */
const aboutOf = (
  event: WebhookEvent,
): Pick<DeliveryReport, "eventId" | "eventType" | "channelNumberId" | "subject"> => ({
  eventId: event.id,
  eventType: event.type,
  channelNumberId: event.channelNumberId,
  subject: event.type === "message.status" || event.type === "message.received" ? event.data.messageId : event.id,
});

const deadReport = (event: WebhookEvent, webhookId: string | null, attempt: number, at: number): DeliveryReport => ({
  ...aboutOf(event),
  webhookId,
  attempt,
  attemptedAt: at,
  outcome: "dead",
  statusCode: null,
  latencyMs: null,
  error: DEAD_ERROR,
  nextRetryAt: null,
});

function dispositionOf(
  message: Message<WebhookQueueMessage>,
  entries: Entry[],
  results: Map<Entry, Result>,
  schedule: readonly number[],
): Disposition & { dead?: Entry[] } {
  const attempted = (e: Entry) => results.get(e)!.kind === "attempted";
  const pending = entries.filter((e) => {
    const r = results.get(e)!;
    return r.kind === "deferred" || (r.kind === "attempted" && r.attempt.outcome !== "delivered");
  });
  if (pending.length === 0) return { kind: "ack" };
  const first = pending[0]!.attempt;
  if (pending.length === entries.length && pending.every((e) => attempted(e) && e.attempt === first)) {
    // All of it was tried and failed: the queue retries it as it is and dead-letters it after
    // max_retries. A re-queued pack starts at a later attempt than the queue counts, so it is
    // declared dead here when its events' count is spent.
    if (first >= MAX_ATTEMPTS && message.attempts < MAX_ATTEMPTS) return { kind: "dead", entries: pending };
    return { kind: "retry", delaySeconds: retryDelaySeconds(first, schedule) };
  }
  // Only real attempts count: an event that waited behind a failure keeps its count.
  const tried = pending.map((e) => (attempted(e) ? e.attempt : e.attempt - 1));
  const spent = pending.filter((_, i) => tried[i]! >= MAX_ATTEMPTS);
  const left = pending.filter((_, i) => tried[i]! < MAX_ATTEMPTS);
  const leftTried = tried.filter((t) => t < MAX_ATTEMPTS);
  if (left.length === 0) return { kind: "dead", entries: spent };
  return {
    kind: "requeue",
    events: left.map((e) => e.event),
    tried: leftTried,
    delaySeconds: retryDelaySeconds(Math.max(1, ...leftTried), schedule),
    dead: spent,
  };
}

/** The delivery-log report of one event's turn in this invocation. */
function reportOf(e: Entry, result: Result, at: number, schedule: readonly number[]): DeliveryReport {
  const base = { ...aboutOf(e.event), attempt: e.attempt, statusCode: null, latencyMs: null, error: null };
  if (result.kind === "no_webhook")
    return { ...base, webhookId: null, attemptedAt: at, outcome: "no_webhook", nextRetryAt: null };
  const nextRetryAt = at + retryDelaySeconds(e.attempt, schedule) * 1000;
  if (result.kind === "deferred")
    return { ...base, webhookId: result.webhook.id, attemptedAt: at, outcome: "deferred", nextRetryAt };
  const { attempt } = result;
  return {
    ...base,
    webhookId: result.webhook.id,
    attemptedAt: Date.parse(attempt.attemptedAt),
    outcome: attempt.outcome,
    statusCode: attempt.statusCode,
    latencyMs: attempt.latencyMs,
    error: attempt.error,
    nextRetryAt: attempt.outcome === "delivered" ? null : nextRetryAt,
  };
}

/**
 * Consumer of `webhook-deliveries`: each queue message carries a pack of events
 * (see lib/event-packs.ts). One number's events are attempted one after
 * another in queue order, numbers in parallel; once an endpoint fails, its
 * later events in this invocation are not tried (they would fail alike, each
 * after a timeout, and must not overtake the failed one): they wait with it.
 * Outcomes go to the workspace objects (the delivery log) and health changes
 * to D1. A message whose events all failed is retried on the schedule of
 * RETRY_DELAYS_SECONDS; a pack partly delivered is acknowledged and its
 * undelivered events are queued again as a pack of their own, with the same
 * delay. Events whose number has no enabled webhook are recorded `no_webhook`
 * (replayable).
 */
export async function consumeWebhookDeliveries(batch: MessageBatch<WebhookQueueMessage>, env: Env): Promise<void> {
  const entries: Entry[] = batch.messages.flatMap((message) => {
    const tried = triedOf(message.body);
    // Earlier deliveries of this very message were whole retries, in which every event was tried.
    return eventsOf(message.body).map((event, i) => ({ message, event, attempt: tried[i]! + message.attempts }));
  });
  const webhooks = new Map(
    (await webhooksForNumbers(env.DB, [...new Set(entries.map((e) => e.event.channelNumberId))])).map((w) => [
      w.channel_number_id,
      w,
    ]),
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

  const results = new Map<Entry, Result>();
  const byNumber = Map.groupBy(entries, (e) => e.event.channelNumberId);
  await Promise.all(
    [...byNumber.values()].map(async (list) => {
      let failed = false;
      for (const e of list) {
        const webhook = webhooks.get(e.event.channelNumberId);
        if (!webhook || webhook.status !== "enabled" || webhook.workspace_id !== e.event.workspaceId) {
          results.set(e, { kind: "no_webhook" });
        } else if (failed) {
          results.set(e, { kind: "deferred", webhook });
        } else {
          const attempt = await attemptDelivery(e.event, webhook, secretOf(webhook), env);
          results.set(e, { kind: "attempted", webhook, attempt });
          failed = attempt.outcome !== "delivered";
        }
      }
    }),
  );

  const at = now();
  const schedule = retrySchedule(env);
  const reports = entries.map((e) => ({
    workspaceId: e.event.workspaceId,
    report: reportOf(e, results.get(e)!, at, schedule),
  }));
  const dispositions = batch.messages.map((message) =>
    dispositionOf(
      message,
      entries.filter((e) => e.message === message),
      results,
      schedule,
    ),
  );
  for (const d of dispositions) {
    const spent = d.kind === "dead" ? d.entries : (d.dead ?? []);
    for (const e of spent) {
      reports.push({
        workspaceId: e.event.workspaceId,
        report: deadReport(e.event, webhooks.get(e.event.channelNumberId)?.id ?? null, e.attempt, at),
      });
    }
  }

  const health = healthStatements(env.DB, [...results.values()], at);
  await Promise.all([
    reportToWorkspaces(env, reports),
    health.length === 0
      ? Promise.resolve()
      : env.DB.batch(health).then(
          () => undefined,
          (err: unknown) => log("error", "webhook health could not be written", { detail: errorText(err) }),
        ),
  ]);

  await Promise.all(
    batch.messages.map(async (message, i) => {
      const d = dispositions[i]!;
      if (d.kind === "ack" || d.kind === "dead") {
        message.ack();
        return;
      }
      log("warn", "webhook delivery failed", {
        eventIds: (d.kind === "requeue" ? d.events : eventsOf(message.body)).map((e) => e.id).join(","),
        retryInSeconds: d.delaySeconds,
      });
      if (d.kind === "requeue") {
        try {
          await env.WEBHOOK_QUEUE.send({ events: d.events, tried: d.tried } satisfies WebhookQueueMessage, {
            contentType: "json",
            delaySeconds: d.delaySeconds,
          });
          message.ack();
          return;
        } catch (err) {
          // The whole pack comes back instead: its delivered events arrive twice (customers deduplicate on webhook-id).
          log("warn", "undelivered events could not be queued again; the pack is retried whole", {
            detail: err instanceof Error ? err.message : String(err),
          });
        }
      }
      message.retry({ delaySeconds: d.delaySeconds });
    }),
  );
}

/**
 * Consumer of `webhook-deliveries-dlq`: events whose retries ran out. Each
 * workspace records them `dead`, with a `dead` entry in the webhook's delivery log.
 */
export async function consumeDeadWebhookDeliveries(batch: MessageBatch<WebhookQueueMessage>, env: Env): Promise<void> {
  const dead = batch.messages.flatMap((m) => {
    const tried = triedOf(m.body);
    // Numbered like the last attempt it follows: the queue dead-letters a message after its
    // MAX_ATTEMPTS deliveries, and the dead-letter queue counts its own deliveries afresh (its
    // `m.attempts` says nothing about the attempts at the endpoint).
    return eventsOf(m.body).map((event, i) => ({ event, attempt: tried[i]! + MAX_ATTEMPTS }));
  });
  const webhooks = new Map(
    (await webhooksForNumbers(env.DB, [...new Set(dead.map((d) => d.event.channelNumberId))])).map((w) => [
      w.channel_number_id,
      w,
    ]),
  );
  const at = now();
  const byWorkspace = new Map<string, DeliveryReport[]>();
  for (const { event, attempt } of dead) {
    const report = deadReport(event, webhooks.get(event.channelNumberId)?.id ?? null, attempt, at);
    byWorkspace.set(event.workspaceId, [...(byWorkspace.get(event.workspaceId) ?? []), report]);
  }
  try {
    await Promise.all([...byWorkspace].map(([workspaceId, list]) => recordDeliveries(env, workspaceId, list)));
    batch.ackAll();
  } catch (err) {
    log("error", "dead webhook events could not be recorded", { detail: errorText(err) });
    batch.retryAll({ delaySeconds: 30 });
  }
}
