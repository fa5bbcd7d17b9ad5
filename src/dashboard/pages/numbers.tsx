import { Hono } from "hono";
import { getConnectedNumber, listConnectedNumbers } from "../../db/channel-numbers";
import { getWebhookOfNumber } from "../../db/webhooks";
import { findByUuid } from "../../domain/job-id";
import { toPage } from "../../lib/pagination";
import type { DashboardEnv } from "../context";
import { Time, TableScroll } from "../components";
import { pageCursor } from "../paging";
import { notFoundPage } from "./errors";
import { WebhookUrl } from "../webhook-url";

const PAGE_SIZE = 50;

const UPSTREAM_LABEL = { sandbox: "Sandbox (delivers nowhere; for tests)", cloud: "Cloud API (live)" } as const;

export const numberPages = new Hono<DashboardEnv>()
  .get("/numbers", async (c) => {
    const { workspace_id: workspaceId } = c.get("session");
    const rows = await listConnectedNumbers(c.env.DB, workspaceId, PAGE_SIZE + 1, pageCursor(c));
    const page = toPage(rows, PAGE_SIZE, (r) => ({ sortKey: r.created_at, id: r.id }), (r) => r);
    return c.render(
      <>
        <h1>Numbers</h1>
        <p>Connected channel numbers of the workspace. Use a number's id as <code>channelNumberId</code> when sending.</p>
        {page.data.length === 0 ? (
          <p>No number is connected yet. Numbers are connected by our team; ask support.</p>
        ) : (
          <TableScroll label="Numbers">
            <table>
              <thead>
                <tr>
                  <th scope="col">Number</th>
                  <th scope="col">Upstream</th>
                  <th scope="col">Status</th>
                  <th scope="col">Connected</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((n) => (
                  <tr>
                    <td>
                      <a href={`/dashboard/numbers/${n.id}`}>{n.display_phone_number}</a>
                    </td>
                    <td>{n.upstream_type}</td>
                    <td>{n.status}</td>
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
      </>,
      { title: "Numbers" },
    );
  })
  .get("/numbers/:id", async (c) => {
    const { workspace_id: workspaceId, role } = c.get("session");
    const id = c.req.param("id");
    const number = await findByUuid(id, (stored) => getConnectedNumber(c.env.DB, workspaceId, stored));
    if (!number) return notFoundPage(c);
    const webhook = await getWebhookOfNumber(c.env.DB, workspaceId, number.id);
    return c.render(
      <>
        <p class="crumbs">
          <a href="/dashboard/numbers">Numbers</a> /
        </p>
        <h1>{number.display_phone_number}</h1>
        <dl class="facts">
          <dt>Id (channelNumberId)</dt>
          <dd>
            <code>{number.id}</code>
          </dd>
          <dt>Status</dt>
          <dd>{number.status}</dd>
          <dt>Upstream</dt>
          <dd>{UPSTREAM_LABEL[number.upstream_type]}</dd>
          <dt>Connected</dt>
          <dd>
            <Time iso={number.created_at} />
          </dd>
          <dt>Messages</dt>
          <dd>
            <a href={`/dashboard/messages?channelNumberId=${number.id}`}>Messages of this number</a>
          </dd>
          <dt>Webhook</dt>
          <dd>
            {webhook ? (
              <>
                <WebhookUrl url={webhook.url} role={role} /> ({webhook.status}
                {webhook.failing_since ? ", failing" : ""}) · <a href={`/dashboard/webhooks/${number.id}`}>Webhook and deliveries</a>
              </>
            ) : (
              <>
                none · <a href={`/dashboard/webhooks/${number.id}`}>Configure</a>
              </>
            )}
          </dd>
        </dl>
        <p class="hint">
          Customer-service windows (24 hours after a contact's last message) are not listed here yet; check one contact with{" "}
          <code>{`GET /api/v1/channel-numbers/${number.id}/contacts/{phone}`}</code>.
        </p>
      </>,
      { title: number.display_phone_number },
    );
  });
