import { Hono } from "hono";
import type { Context } from "hono";
import {
  getConnectedNumber,
  listAllNumbers,
  listConnectedNumbers,
  type ChannelNumberRow,
} from "../../db/channel-numbers";
import { numberHealth, numberHealthAndSending } from "./number-detail";
import { getWebhookOfNumber } from "../webhooks/store";
import { findByUuid } from "../../lib/job-id";
import { toPage } from "../../lib/pagination";
import type { DashboardEnv } from "../../dashboard/context";
import { CopyableId, ConfirmForm, Time, TableScroll } from "../../dashboard/components";
import { hasRole } from "../../dashboard/roles";
import { HealthFacts, HealthState, qualityAndTier } from "./health-parts";
import { ConnectForms, ReplaceTokenForm, type FormState } from "./number-forms";
import { pageCursor } from "../../dashboard/paging";
import { notFoundPage } from "../../dashboard/pages/errors";
import { WebhookUrl } from "../../dashboard/webhook-url";
import { testContactsOf } from "../sandbox/test-contacts";
import { TestContacts } from "../sandbox/test-contact-forms";
import { TestMessageForms, type TestMessageState } from "../messages/test-message-forms";

const PAGE_SIZE = 50;
/** Recently disconnected numbers listed under the connected ones (the API reads them as unknown). */
const DISCONNECTED_SHOWN = 10;

const NUMBER_KIND_LABEL = { sandbox: "Sandbox (delivers nowhere; for tests)", cloud: "Cloud API (live)" } as const;

/** The Numbers page; `form` re-renders a refused connect form with its error. */
export async function renderNumbers(
  c: Context<DashboardEnv>,
  form: FormState = {},
  kind: "sandbox" | "cloud" | null = null,
) {
  const { workspace_id: workspaceId, role } = c.get("session");
  const rows = await listConnectedNumbers(c.env.DB, workspaceId, PAGE_SIZE + 1, pageCursor(c));
  const page = toPage(
    rows,
    PAGE_SIZE,
    (r) => ({ sortKey: r.created_at, id: r.id }),
    (r) => r,
  );
  // Stored health only: the list never calls the operator (the number's page refreshes it hourly).
  const healths = await Promise.all(page.data.map((n) => numberHealth(c.env, n, { refresh: false })));
  const disconnected = (await listAllNumbers(c.env.DB, workspaceId))
    .filter((n) => n.status === "disconnected")
    .slice(-DISCONNECTED_SHOWN)
    .reverse();
  const isOwner = hasRole(role, "owner");
  return c.render(
    <>
      <h1>Numbers</h1>
      <p>
        Channel numbers of the workspace. Use a number's id as <code>channelNumberId</code> when sending.
      </p>
      {page.data.length === 0 ? (
        <p>
          No number is connected yet.{isOwner ? " Connect one below." : " An owner of the workspace can connect one."}
        </p>
      ) : (
        <TableScroll label="Numbers">
          <table>
            <thead>
              <tr>
                <th scope="col">Number</th>
                <th scope="col">Id (channelNumberId)</th>
                <th scope="col">Upstream</th>
                <th scope="col">State</th>
                <th scope="col">Quality · tier</th>
                <th scope="col">Sends today</th>
                <th scope="col">Connected</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((n, i) => (
                <tr>
                  <td>
                    <a href={`/dashboard/numbers/${n.id}`}>{n.display_phone_number}</a>
                  </td>
                  <td>
                    <CopyableId id={n.id} label={`the id of ${n.display_phone_number}`} />
                  </td>
                  <td>{n.upstream_type}</td>
                  <td>
                    <HealthState health={healths[i]!} />
                    {healths[i]!.lastOperatorError ? <span class="hint"> (operator error)</span> : null}
                  </td>
                  <td>{qualityAndTier(healths[i]!)}</td>
                  <td>{healths[i]!.sendsToday}</td>
                  <td>
                    <Time iso={n.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      {page.nextCursor ? (
        <p>
          <a href={`/dashboard/numbers?cursor=${encodeURIComponent(page.nextCursor)}`}>Next page</a>
        </p>
      ) : null}
      {isOwner ? <ConnectForms form={form} kind={kind} /> : null}
      {disconnected.length > 0 ? (
        <>
          <h2>Disconnected</h2>
          <ul>
            {disconnected.map((n) => (
              <li>
                {n.display_phone_number} ({n.upstream_type}) · <code>{n.id}</code> · disconnected{" "}
                <Time iso={n.disconnected_at} />
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </>,
    { title: "Numbers" },
  );
}

/**
 * A number's page (health refreshed from the operator when an hour old); `form` re-renders a refused
 * token form, `contactForm` a refused test contact and `messageForm` a refused test message (sandbox numbers).
 */
export async function renderNumber(
  c: Context<DashboardEnv>,
  number: ChannelNumberRow,
  form: FormState = {},
  contactForm: FormState = {},
  messageForm?: TestMessageState,
) {
  const { workspace_id: workspaceId, role } = c.get("session");
  const [webhook, { health, sending }, contacts] = await Promise.all([
    getWebhookOfNumber(c.env.DB, workspaceId, number.id),
    numberHealthAndSending(c.env, number, { refresh: true }),
    testContactsOf(c.env.DB, number),
  ]);
  const isOwner = hasRole(role, "owner");
  return c.render(
    <>
      <p class="crumbs">
        <a href="/dashboard/numbers">Numbers</a> /
      </p>
      <h1>{number.display_phone_number}</h1>
      <dl class="facts">
        <dt>Id (channelNumberId)</dt>
        <dd>
          <CopyableId id={number.id} label="the number's id" />
        </dd>
        <dt>Upstream</dt>
        <dd>
          {NUMBER_KIND_LABEL[number.upstream_type]}
          {number.upstream_phone_number_id ? (
            <span class="hint"> · phone number id {number.upstream_phone_number_id}</span>
          ) : null}
          {number.waba_id ? <span class="hint"> · business account {number.waba_id}</span> : null}
        </dd>
        <HealthFacts health={health} sending={sending} />
        <dt>Connected</dt>
        <dd>
          <Time iso={number.created_at} />
        </dd>
        <dt>Messages</dt>
        <dd>
          <a href={`/dashboard/messages?channelNumberId=${number.id}`}>Messages of this number</a>
        </dd>
        <dt>Templates</dt>
        <dd>
          <a href={`/dashboard/numbers/${number.id}/templates`}>Templates of this number</a>{" "}
          <span class="hint">(what it can send outside the 24-hour window)</span>
        </dd>
        <dt>Webhook</dt>
        <dd>
          {webhook ? (
            <>
              <WebhookUrl url={webhook.url} role={role} /> ({webhook.status}
              {webhook.failing_since ? ", failing" : ""}) ·{" "}
              <a href={`/dashboard/webhooks/${number.id}`}>Webhook and deliveries</a>
            </>
          ) : (
            <>
              none · <a href={`/dashboard/webhooks/${number.id}`}>Configure</a>
            </>
          )}
        </dd>
      </dl>
      <p class="hint">
        Customer-service windows (24 hours after a contact's last message) are not listed here yet; check one contact
        with <code>{`GET /api/v1/channel-numbers/${number.id}/contacts/{phone}`}</code>.
      </p>
      {number.upstream_type === "sandbox" ? (
        <TestContacts
          numberId={number.id}
          contacts={contacts}
          canWrite={hasRole(role, "developer")}
          form={contactForm}
        />
      ) : null}
      {number.upstream_type === "sandbox" && hasRole(role, "developer") ? (
        <TestMessageForms numberId={number.id} state={messageForm} />
      ) : null}
      {isOwner ? (
        <section aria-labelledby="manage-heading" class="card">
          <h2 id="manage-heading">Manage</h2>
          {number.upstream_type === "cloud" ? <ReplaceTokenForm numberId={number.id} form={form} /> : null}
          <p>
            Disconnecting refuses new sends at once; messages still waiting to leave end <code>failed</code> with{" "}
            <code>number_disconnected</code> (each with its webhook event).
          </p>
          <ConfirmForm
            action={`/dashboard/numbers/${number.id}/disconnect`}
            question={`Disconnect ${number.display_phone_number}? Messages still waiting to leave fail with number_disconnected.`}
            label="Disconnect"
          />
        </section>
      ) : null}
    </>,
    { title: number.display_phone_number },
  );
}

export const numberPages = new Hono<DashboardEnv>()
  .get("/numbers", (c) => renderNumbers(c))
  .get("/numbers/:id", async (c) => {
    const { workspace_id: workspaceId } = c.get("session");
    const number = await findByUuid(c.req.param("id"), (stored) => getConnectedNumber(c.env.DB, workspaceId, stored));
    if (!number) return notFoundPage(c);
    return renderNumber(c, number);
  });
