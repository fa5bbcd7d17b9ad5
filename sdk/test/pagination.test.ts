import { describe, expect, it } from "vitest";
import { createTenant, recordingFetch } from "./helpers/tenant.js";

describe("auto-pagination over the cursor", () => {
  it("channelNumbers.list walks every page", async () => {
    const t = await createTenant();
    const ids = [t.numberId, await t.addNumber(), await t.addNumber()];
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });

    const seen: string[] = [];
    for await (const number of client.channelNumbers.list({ limit: 1 })) seen.push(number.id);

    expect(seen).toEqual(ids);
    const requests = net.seen.map((s) => new URL(s.url));
    expect(requests).toHaveLength(3);
    expect(requests[0]!.searchParams.get("cursor")).toBeNull();
    expect(requests.slice(1).every((u) => u.searchParams.get("cursor"))).toBe(true);
  });

  it("webhooks.list and webhooks.listDeliveries page too; pages() yields whole pages", async () => {
    const t = await createTenant();
    const numbers = [t.numberId, await t.addNumber(), await t.addNumber()];
    const client = t.client();
    const created = [];
    for (const [i, n] of numbers.entries()) {
      created.push(await client.webhooks.configure({ channelNumberId: n, url: `http://127.0.0.1:${8802 + i}/unused` }));
    }
    const pages = [];
    for await (const page of client.webhooks.list({ limit: 2 }).pages()) pages.push(page.data.map((w) => w.id));
    expect(pages).toEqual([[created[0]!.id, created[1]!.id], [created[2]!.id]]);
    expect(await client.webhooks.list({ limit: 2 }).toArray()).toHaveLength(3);
    // Nothing was delivered to these webhooks: an empty log is one empty page.
    expect(await client.webhooks.listDeliveries(created[0]!.id, { limit: 5 }).toArray()).toEqual([]);
  });
});
