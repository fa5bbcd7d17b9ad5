import { env } from "cloudflare:workers";
import { vi } from "vitest";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { api, json } from "./http";
import { createTenant, type Tenant } from "./fixtures";
import { answers, type Network } from "./webhook-net";
import { signedInMember, type Member } from "./dashboard";

/** A tenant with everything a dashboard POST can touch: a key, a webhook (with one delivered event if asked), members. */
export interface World {
  tenant: Tenant;
  owner: Member;
  developer: Member;
  viewer: Member;
  webhookUrl: string;
  webhookId: string;
  eventId: string | null;
}

/** Sends the webhook a test event and waits until it was delivered; returns its id. */
export async function deliveredTestEvent(tenant: Tenant, webhookId: string): Promise<string> {
  const { eventId } = await json<{ eventId: string }>(
    await api(`/webhooks/${webhookId}/test`, tenant.key, { method: "POST" }),
  );
  // Its delivered attempt in the webhook's log (read from the workspace object, as the API does,
  // without spending the key's request budget).
  await vi.waitFor(
    async () => {
      const log = await workspaceStub(env, tenant.workspaceId).listDeliveries(tenant.numberId, webhookId, null, 10);
      if (!log.some((a) => a.event_id === eventId && a.outcome === "delivered")) throw new Error("not delivered yet");
    },
    { timeout: 15_000, interval: 100 },
  );
  return eventId;
}

/**
 * A fresh world for one test. `withEvent`: the webhook also gets a test event,
 * delivered before this returns (so that it can be replayed, and no delivery is
 * still under way while a test compares states).
 */
export async function world(net: Network, tag: string, withEvent = false): Promise<World> {
  const tenant = await createTenant();
  const host = `${tag}-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const webhookUrl = `https://${host}/hook`;
  net.receivers.set(webhookUrl, answers(204));
  const configured = await api("/webhooks", tenant.key, {
    method: "POST",
    json: { channelNumberId: tenant.numberId, url: webhookUrl },
  });
  const webhookId = (await json<{ id: string }>(configured)).id;
  const eventId = withEvent ? await deliveredTestEvent(tenant, webhookId) : null;
  const [owner, developer, viewer] = await Promise.all([
    signedInMember(tenant.workspaceId, "owner"),
    signedInMember(tenant.workspaceId, "developer"),
    signedInMember(tenant.workspaceId, "viewer"),
  ]);
  return { tenant, owner, developer, viewer, webhookUrl, webhookId, eventId };
}
