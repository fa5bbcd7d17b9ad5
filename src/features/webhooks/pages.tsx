import { Hono } from "hono";
import type { Context } from "hono";
import { getConnectedNumber, listConnectedNumbers, type ChannelNumberRow } from "../../db/channel-numbers";
import { getWebhookOfNumber, reenableWebhook, webhooksForNumbers, type WebhookRow } from "./store";
import { findByUuid } from "../../lib/job-id";
import { configureWebhook } from "./configure-webhook";
import { deliveryLog, lastFailure } from "./delivery-attempts";
import { replayEvent, sendTestEvent } from "./trigger-events";
import { redactWebhookUrl, toDeliveryView } from "../../domain/webhook-view";
import { auditMember } from "../audit/member-audit";
import { config } from "../../config";
import { isoNow } from "../../lib/clock";
import { toPage } from "../../lib/pagination";
import { DISABLE_AFTER_MS } from "../../domain/webhook-health";
import { memberCaller, type DashboardEnv } from "../../dashboard/context";
import type { RateLimited } from "../../domain/limit-check";
import { FieldError, Time, TableScroll } from "../../dashboard/components";
import { DeliveryLog } from "../../dashboard/delivery-log";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { pageCursor } from "../../dashboard/paging";
import { hasRole, requireRole } from "../../dashboard/roles";
import { notFoundPage, rateLimitedPage } from "../../dashboard/pages/errors";
import { WebhookUrl } from "../../dashboard/webhook-url";
import { WEBHOOK_API_VERSIONS, type WebhookApiVersion } from "../../messages/events";

const LOG_PAGE_SIZE = 25;
const MAX_URL_CHARS = 2048;
// One webhook per number, and a plan allows at most 100 numbers: one page lists them all.
const MAX_NUMBERS = 100;
const DISABLE_AFTER_HOURS = DISABLE_AFTER_MS / 3_600_000;

const API_VERSION_LABEL: Record<WebhookApiVersion, string> = {
  1: "API v1 (sent, with deliveredAt and readAt)",
  2: "API v2 (delivered and read as statuses)",
};

const back = (numberId: string) => `/dashboard/webhooks/${numberId}`;

async function ownNumber(c: Context<DashboardEnv>): Promise<ChannelNumberRow | null> {
  const id = c.req.param("numberId") ?? "";
  return findByUuid(id, (stored) => getConnectedNumber(c.env.DB, c.get("session").workspace_id, stored));
}

/** The webhook of the URL's number, if the number is the workspace's and has one. */
async function ownWebhook(c: Context<DashboardEnv>): Promise<{ number: ChannelNumberRow; webhook: WebhookRow } | null> {
  const number = await ownNumber(c);
  const webhook = number ? await getWebhookOfNumber(c.env.DB, c.get("session").workspace_id, number.id) : null;
  return number && webhook ? { number, webhook } : null;
}

/**
 * Sends an event to an enabled webhook (a disabled one must be re-enabled
 * first) within the API's limits, records it in the audit log, and goes back
 * to the webhook's page.
 */
async function sendEvent(
  c: Context<DashboardEnv>,
  webhook: WebhookRow,
  action: "webhook.test_sent" | "webhook.event_replayed",
  send: () => Promise<{ ok: true; eventId: string } | { ok: false; problem: "event_not_found" } | RateLimited>,
  notice: string,
) {
  if (webhook.status !== "enabled") {
    await setFlash(c, { notice: "The webhook is disabled: re-enable it first." }, c.get("session").token_hash);
    return c.redirect(back(webhook.channel_number_id), 303);
  }
  const outcome = await send();
  if (!outcome.ok)
    return outcome.problem === "rate_limited"
      ? rateLimitedPage(c, outcome, back(webhook.channel_number_id))
      : notFoundPage(c);
  await auditMember(c, { action, target: { type: "webhook", id: webhook.id }, detail: `event ${outcome.eventId}` });
  await setFlash(c, { notice }, c.get("session").token_hash);
  return c.redirect(back(webhook.channel_number_id), 303);
}

function HealthLine({ w }: { w: WebhookRow }) {
  if (w.status === "disabled") return <strong class="bad">disabled</strong>;
  if (w.failing_since) return <strong class="warn">failing</strong>;
  return <span class="ok">enabled</span>;
}

async function renderWebhook(
  c: Context<DashboardEnv>,
  number: ChannelNumberRow,
  form: { url?: string; apiVersion?: WebhookApiVersion; error?: string } = {},
) {
  const { workspace_id: workspaceId, role } = c.get("session");
  const canWrite = hasRole(role, "developer");
  const webhook = await getWebhookOfNumber(c.env.DB, workspaceId, number.id);
  const before = Number(pageCursor(c)?.sortKey);
  const [rows, failure] = webhook
    ? await Promise.all([
        deliveryLog(c.env, webhook, Number.isSafeInteger(before) ? before : null, LOG_PAGE_SIZE + 1),
        lastFailure(c.env, webhook),
      ])
    : [[], null];
  const page = toPage(
    rows,
    LOG_PAGE_SIZE,
    (r) => ({ sortKey: String(r.seq), id: "" }),
    (r) => toDeliveryView(webhook!.id, r),
  );
  // Before the log for a new webhook, after it once there is one (the log is what people come back for).
  const configureForm = canWrite ? (
    <section class="card" aria-labelledby="configure-heading">
      <h2 id="configure-heading">{webhook ? "Replace the URL" : "Configure"}</h2>
      <form method="post" action={`/dashboard/webhooks/${number.id}`} class="stack">
        <label for="url">Endpoint URL</label>
        <input
          id="url"
          name="url"
          type="url"
          required
          maxlength={MAX_URL_CHARS}
          placeholder="https://hooks.example.com/messaging"
          value={form.url ?? webhook?.url ?? ""}
          aria-invalid={form.error ? "true" : undefined}
          aria-describedby={form.error ? "url-error url-hint" : "url-hint"}
        />
        <p class="hint" id="url-hint">
          {config(c.env).webhooks.allowInsecureUrls
            ? "Public HTTPS, or (local development: this deployment sets ALLOW_INSECURE_WEBHOOK_URLS) http://localhost and http://127.0.0.1"
            : "Public HTTPS only"}
          ; the address is checked now and at every delivery. Saving issues a new signing secret
          {webhook ? " and the current one stops being used at once" : ""}.
        </p>
        <FieldError field="url" message={form.error} />
        <label for="apiVersion">Event shapes</label>
        <select id="apiVersion" name="apiVersion" aria-describedby="api-version-hint">
          {WEBHOOK_API_VERSIONS.map((v) => (
            <option value={String(v)} selected={v === (form.apiVersion ?? webhook?.api_version ?? 1)}>
              {API_VERSION_LABEL[v]}
            </option>
          ))}
        </select>
        <p class="hint" id="api-version-hint">
          The API version whose events this endpoint receives: in v2, <code>delivered</code> and <code>read</code> are
          statuses of their own; v1 keeps <code>sent</code> with <code>deliveredAt</code> and <code>readAt</code>.
        </p>
        <button type="submit">{webhook ? "Replace URL and secret" : "Save"}</button>
      </form>
    </section>
  ) : null;
  return c.render(
    <>
      <p class="crumbs">
        <a href="/dashboard/webhooks">Webhooks</a> /
      </p>
      <h1>Webhook of {number.display_phone_number}</h1>
      {webhook ? (
        <section class="card" aria-labelledby="status-heading">
          <h2 id="status-heading">Endpoint</h2>
          <dl class="facts">
            <dt>URL</dt>
            <dd>
              <WebhookUrl url={webhook.url} role={role} />
            </dd>
            <dt>Status</dt>
            <dd>
              <HealthLine w={webhook} />
            </dd>
            {webhook.failing_since ? (
              <>
                <dt>Failing since</dt>
                <dd>
                  <Time iso={webhook.failing_since} />
                </dd>
              </>
            ) : null}
            <dt>Event shapes</dt>
            <dd>{API_VERSION_LABEL[webhook.api_version]}</dd>
            <dt>Configured</dt>
            <dd>
              <Time iso={webhook.updated_at} />
            </dd>
          </dl>
          {webhook.status === "disabled" ? (
            <div class="problem" role="note">
              <p>
                Disabled <Time iso={webhook.disabled_at} /> because deliveries kept failing for more than{" "}
                {DISABLE_AFTER_HOURS} hours. Events since then were kept and can be replayed.
              </p>
              {failure?.error ? (
                <p>
                  Last error: <span>{failure.error}</span>
                </p>
              ) : null}
              {canWrite ? (
                <form method="post" action={`/dashboard/webhooks/${number.id}/enable`}>
                  <button type="submit">Re-enable (same URL and secret)</button>
                </form>
              ) : null}
            </div>
          ) : webhook.failing_since && failure?.error ? (
            <p class="problem">
              Last error: <span>{failure.error}</span>
            </p>
          ) : null}
          {canWrite && webhook.status === "enabled" ? (
            <form method="post" action={`/dashboard/webhooks/${number.id}/test`}>
              <button type="submit" class="secondary">
                Send test event
              </button>
            </form>
          ) : null}
        </section>
      ) : (
        <p>
          This number has no webhook: inbound messages and status changes are kept and can be replayed once you
          configure one.
        </p>
      )}
      {webhook ? null : configureForm}
      {webhook ? (
        <section aria-labelledby="log-heading">
          <h2 id="log-heading">Delivery log</h2>
          {page.data.length === 0 ? (
            <p>No delivery yet.</p>
          ) : (
            <DeliveryLog rows={page.data} numberId={number.id} canReplay={canWrite && webhook.status === "enabled"} />
          )}
          {page.nextCursor ? (
            <p>
              <a href={`/dashboard/webhooks/${number.id}?cursor=${encodeURIComponent(page.nextCursor)}`}>
                Older attempts
              </a>
            </p>
          ) : null}
        </section>
      ) : null}
      {webhook ? configureForm : null}
    </>,
    { title: `Webhook of ${number.display_phone_number}` },
  );
}

export const webhookPages = new Hono<DashboardEnv>()
  .get("/webhooks", async (c) => {
    const { workspace_id: workspaceId, role } = c.get("session");
    const numbers = await listConnectedNumbers(c.env.DB, workspaceId, MAX_NUMBERS);
    const webhooks = new Map(
      (
        await webhooksForNumbers(
          c.env.DB,
          numbers.map((n) => n.id),
        )
      )
        .filter((w) => w.workspace_id === workspaceId)
        .map((w) => [w.channel_number_id, w]),
    );
    return c.render(
      <>
        <h1>Webhooks</h1>
        <p>
          One endpoint per number receives <code>message.received</code> and <code>message.status</code> events, signed
          with the Standard Webhooks scheme.
        </p>
        {numbers.length === 0 ? (
          <p>No number is connected yet.</p>
        ) : (
          <TableScroll label="Webhooks by number">
            <table>
              <thead>
                <tr>
                  <th scope="col">Number</th>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {numbers.map((n) => {
                  const w = webhooks.get(n.id);
                  return (
                    <tr>
                      <td>
                        <a href={back(n.id)}>{n.display_phone_number}</a>
                      </td>
                      <td>{w ? <WebhookUrl url={w.url} role={role} /> : "not configured"}</td>
                      <td>{w ? <HealthLine w={w} /> : "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableScroll>
        )}
      </>,
      { title: "Webhooks" },
    );
  })
  .get("/webhooks/:numberId", async (c) => {
    const number = await ownNumber(c);
    return number ? renderWebhook(c, number) : notFoundPage(c);
  })
  .post("/webhooks/:numberId", requireRole("developer"), async (c) => {
    const number = await ownNumber(c);
    if (!number) return notFoundPage(c);
    const fields = await formFields(c);
    const url = (fields.url ?? "").trim();
    // A form from before the choice (or without it) keeps v1's shapes, as the API's v1 route does.
    const apiVersion: WebhookApiVersion = fields.apiVersion === "2" ? 2 : 1;
    const session = c.get("session");
    if (url.length === 0 || url.length > MAX_URL_CHARS) {
      c.status(400);
      return renderWebhook(c, number, {
        url: url.slice(0, MAX_URL_CHARS),
        apiVersion,
        error: `Enter the endpoint's URL (at most ${MAX_URL_CHARS} characters).`,
      });
    }
    const outcome = await configureWebhook(c.env, memberCaller(session), number.id, url, apiVersion);
    if (!outcome.ok) {
      if (outcome.problem === "number_not_found") return notFoundPage(c);
      if (outcome.problem === "rate_limited") return rateLimitedPage(c, outcome, back(number.id));
      c.status(400);
      return renderWebhook(c, number, { url, apiVersion, error: `This URL is not allowed: ${outcome.reason}` });
    }
    await auditMember(c, {
      action: "webhook.configured",
      target: { type: "webhook", id: outcome.webhook.id },
      detail: `number ${number.id}, ${redactWebhookUrl(outcome.webhook.url)}, API v${apiVersion}`,
    });
    await setFlash(
      c,
      {
        notice: "Webhook saved.",
        secret: { label: "Signing secret (verify our signatures with it)", value: outcome.secret },
      },
      session.token_hash,
    );
    return c.redirect(back(number.id), 303);
  })
  .post("/webhooks/:numberId/test", requireRole("developer"), async (c) => {
    const own = await ownWebhook(c);
    if (!own) return notFoundPage(c);
    return sendEvent(
      c,
      own.webhook,
      "webhook.test_sent",
      () => sendTestEvent(c.env, own.webhook),
      "Test event queued: it appears in the delivery log within seconds.",
    );
  })
  .post("/webhooks/:numberId/enable", requireRole("developer"), async (c) => {
    const own = await ownWebhook(c);
    if (!own) return notFoundPage(c);
    const session = c.get("session");
    await reenableWebhook(c.env.DB, session.workspace_id, own.webhook.id, isoNow());
    await auditMember(c, { action: "webhook.reenabled", target: { type: "webhook", id: own.webhook.id } });
    await setFlash(
      c,
      { notice: "Webhook enabled again. Replay the events it missed from the log." },
      session.token_hash,
    );
    return c.redirect(back(own.webhook.channel_number_id), 303);
  })
  .post("/webhooks/:numberId/deliveries/:eventId/replay", requireRole("developer"), async (c) => {
    const own = await ownWebhook(c);
    if (!own) return notFoundPage(c);
    const eventId = c.req.param("eventId");
    return sendEvent(
      c,
      own.webhook,
      "webhook.event_replayed",
      async () => {
        const replayed = await replayEvent(c.env, own.webhook, eventId);
        return replayed.ok ? { ok: true, eventId } : replayed;
      },
      `Event ${eventId} queued again (same webhook-id).`,
    );
  });
