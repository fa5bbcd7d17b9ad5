import { Hono } from "hono";
import { GettingStarted } from "../getting-started";
import { listConnectedNumbers } from "../../db/channel-numbers";
import { listWebhooks, type WebhookRow } from "../../features/webhooks/store";
import { currentUsage } from "../../features/usage/current-usage";
import type { DashboardEnv } from "../context";
import { Time } from "../components";
import { SendsChart } from "../../features/usage/sends-chart";
import { notFoundPage } from "./errors";
import type { Role } from "../../lib/roles";
import { hasRole } from "../roles";
import { redactWebhookUrl } from "../../domain/webhook-view";

const SHOWN_NUMBERS = 10;
// A workspace has at most its plan's numbers (100 on the largest plan), so one page covers its webhooks.
const MAX_WEBHOOKS = 100;

function UsageBar({ used, limit }: { used: number; limit: number }) {
  const percent = limit > 0 ? Math.min(100, Math.round((used / limit) * 100)) : 100;
  return (
    <div class="usage">
      <label for="usage-meter">
        Messages this period: <strong>{used.toLocaleString("en-US")}</strong> of {limit.toLocaleString("en-US")} (
        {percent}%)
      </label>
      <meter
        id="usage-meter"
        min={0}
        max={Math.max(limit, 1)}
        low={limit * 0.8}
        high={limit * 0.95}
        optimum={0}
        value={used}
      >
        {percent}%
      </meter>
    </div>
  );
}

function WebhookHealth({ webhooks, role }: { webhooks: WebhookRow[]; role: Role }) {
  const unhealthy = webhooks.filter((w) => w.status === "disabled" || w.failing_since !== null);
  if (webhooks.length === 0) {
    return (
      <p>
        No webhook is configured. <a href="/dashboard/webhooks">Set one up</a> to receive inbound messages and status
        changes.
      </p>
    );
  }
  if (unhealthy.length === 0)
    return (
      <p class="ok">
        {webhooks.length === 1
          ? "The webhook endpoint is delivering."
          : `All ${webhooks.length} webhook endpoints are delivering.`}
      </p>
    );
  return (
    <ul class="problems">
      {unhealthy.map((w) => (
        <li>
          <a href={`/dashboard/webhooks/${w.channel_number_id}`}>
            {hasRole(role, "developer") ? w.url : redactWebhookUrl(w.url)}
          </a>
          :{" "}
          {w.status === "disabled" ? (
            <strong class="bad">disabled</strong>
          ) : (
            <>
              <strong class="warn">failing</strong> since <Time iso={w.failing_since} />
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

export const overviewPage = new Hono<DashboardEnv>().get("/", async (c) => {
  const { workspace_id: workspaceId, role } = c.get("session");
  const [usage, numbers, webhooks] = await Promise.all([
    currentUsage(c.env, workspaceId),
    listConnectedNumbers(c.env.DB, workspaceId, SHOWN_NUMBERS + 1),
    listWebhooks(c.env.DB, workspaceId, MAX_WEBHOOKS),
  ]);
  if (!usage) return notFoundPage(c);
  return c.render(
    <>
      <h1>Overview</h1>
      {/* Nothing sent in this period or the previous one: the first steps, before anything else. */}
      {usage.daily.every((d) => d.accepted === 0) ? (
        <GettingStarted origin={new URL(c.req.url).origin} number={numbers[0]} />
      ) : null}
      <section aria-labelledby="plan-heading" class="card">
        <h2 id="plan-heading">Plan and usage</h2>
        <p>
          Plan: <strong>{usage.workspace.plan_name}</strong>. Period <Time iso={usage.period.start} /> to{" "}
          <Time iso={usage.period.end} /> (UTC calendar month).
        </p>
        <UsageBar used={usage.messages.used} limit={usage.messages.limit} />
      </section>
      <section aria-labelledby="sends-heading" class="card">
        <h2 id="sends-heading">Sends per day</h2>
        <SendsChart daily={usage.daily} period={usage.period} />
        <p>
          <a href="/dashboard/messages">See every message</a>
        </p>
      </section>
      <section aria-labelledby="numbers-heading" class="card">
        <h2 id="numbers-heading">Connected numbers</h2>
        <p>
          {usage.numbers.used} of {usage.numbers.limit} allowed by the plan.
        </p>
        {numbers.length > 0 ? (
          <ul>
            {numbers.slice(0, SHOWN_NUMBERS).map((n) => (
              <li>
                <a href={`/dashboard/numbers/${n.id}`}>{n.display_phone_number}</a>{" "}
                <span class="badge">{n.upstream_type}</span>
              </li>
            ))}
          </ul>
        ) : (
          <p>No number is connected yet. Numbers are connected by our team; ask support.</p>
        )}
        {numbers.length > SHOWN_NUMBERS ? <a href="/dashboard/numbers">All numbers</a> : null}
      </section>
      <section aria-labelledby="webhooks-heading" class="card">
        <h2 id="webhooks-heading">Webhook health</h2>
        <WebhookHealth role={role} webhooks={webhooks} />
      </section>
    </>,
    { title: "Overview" },
  );
});
