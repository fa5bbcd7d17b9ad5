import { describe, expect, it } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createTenant, markTestContacts, TEST_CONTACT_2, type Tenant } from "../helpers/fixtures";
import { messageSeeder } from "../helpers/seed-messages";
import { SANDBOX_MAGIC_NUMBERS } from "../../src/operator/sandbox";
import { fakeClockPerTest } from "../helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2044, 1, 1, 9), (t) => t + 5 * 24 * 3_600_000);

interface Listed {
  id: string;
  direction: string;
  status: string;
  to?: string;
  from?: string;
  channelNumberId: string;
  createdAt: string;
}
interface Page {
  data: Listed[];
  nextCursor: string | null;
}

const list = async (t: Tenant, query = ""): Promise<Page> => {
  const res = await api(`/messages${query}`, t.key);
  expect(res.status).toBe(200);
  return json<Page>(res);
};

/** Every page of a list, following nextCursor. */
async function listAll(t: Tenant, query: string, limit = 2): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const sep = query ? "&" : "?";
    const page: Page = await list(
      t,
      `${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    out.push(...page.data);
    cursor = page.nextCursor;
    if (!cursor) return out;
  }
  throw new Error("too many pages");
}

const { sendAt, inbound, drain } = messageSeeder((ms) => clock.advance(ms));

/** A workspace with two numbers and six messages of every kind, returned newest first. */
async function world() {
  const t = await createTenant();
  const b = await connectSandboxNumber(t.workspaceId, "15550009999");
  // The sandbox holds sends to the 24-hour window: the recipient is a test contact of both numbers.
  await markTestContacts(b, TEST_CONTACT_2);
  const m1 = await sendAt(t, t.numberId, "5511000000001", "one");
  const m2 = await sendAt(t, t.numberId, SANDBOX_MAGIC_NUMBERS.windowClosed, "two");
  await drain(t.numberId);
  const m3 = await sendAt(t, t.numberId, "5511000000001", "three"); // stays queued
  const m4 = await sendAt(t, b, "5511000000001", "four");
  await drain(b);
  const i1 = await inbound(t, t.numberId, "5511977770001", "hello");
  const i2 = await inbound(t, b, "5511977770002", "hi");
  return { t, a: t.numberId, b, m1, m2, m3, m4, i1, i2 };
}

describe("GET /messages", () => {
  it("lists outbound and inbound messages newest first; each filter and combinations narrow it", async () => {
    const w = await world();
    const ids = (rows: Listed[]) => rows.map((r) => r.id);
    expect(ids((await list(w.t)).data)).toEqual([w.i2, w.i1, w.m4, w.m3, w.m2, w.m1]);
    expect(ids(await listAll(w.t, "?direction=inbound"))).toEqual([w.i2, w.i1]);
    expect(ids(await listAll(w.t, "?direction=outbound"))).toEqual([w.m4, w.m3, w.m2, w.m1]);
    expect(ids(await listAll(w.t, "?status=failed"))).toEqual([w.m2]);
    expect(ids(await listAll(w.t, "?status=sent"))).toEqual([w.m4, w.m1]);
    expect(ids(await listAll(w.t, "?status=queued"))).toEqual([w.m3]);
    expect(ids(await listAll(w.t, "?status=received"))).toEqual([w.i2, w.i1]);
    expect(ids(await listAll(w.t, `?channelNumberId=${w.a}`))).toEqual([w.i1, w.m3, w.m2, w.m1]);
    expect(ids(await listAll(w.t, "?to=5511000000001"))).toEqual([w.m4, w.m3, w.m1]);
    expect(ids(await listAll(w.t, "?from=5511977770001"))).toEqual([w.i1]);
    expect(ids(await listAll(w.t, `?to=5511000000001&channelNumberId=${w.a}&status=sent`))).toEqual([w.m1]);
    expect(ids(await listAll(w.t, `?direction=inbound&channelNumberId=${w.b}`))).toEqual([w.i2]);

    const all = (await list(w.t)).data;
    const at = (id: string) => all.find((r) => r.id === id)!.createdAt;
    expect(ids(await listAll(w.t, `?createdAfter=${at(w.m2)}&createdBefore=${at(w.i1)}`))).toEqual([w.m4, w.m3]);
    expect(ids(await listAll(w.t, `?createdAfter=${at(w.m4)}`))).toEqual([w.i2, w.i1]);
    expect(ids(await listAll(w.t, `?createdBefore=${at(w.m2)}`))).toEqual([w.m1]);
    // Rows carry the whole record.
    expect(all.find((r) => r.id === w.i1)).toMatchObject({
      direction: "inbound",
      status: "received",
      from: "5511977770001",
      channelNumberId: w.a,
    });
    expect(all.find((r) => r.id === w.m2)).toMatchObject({
      direction: "outbound",
      status: "failed",
      to: SANDBOX_MAGIC_NUMBERS.windowClosed,
    });
  });

  it("pages with limit (default 20) and a cursor that stays stable while new messages arrive", async () => {
    const w = await world();
    const first = await list(w.t, "?limit=2");
    expect(first.data.map((r) => r.id)).toEqual([w.i2, w.i1]);
    expect(first.nextCursor).not.toBeNull();
    // New messages while the client pages: they are newer than page one, so later pages neither repeat nor skip.
    await sendAt(w.t, w.a, "5511000000007", "new one");
    await inbound(w.t, w.b, "5511977770003", "new in");
    const second = await list(w.t, `?limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(second.data.map((r) => r.id)).toEqual([w.m4, w.m3]);
    const third = await list(w.t, `?limit=2&cursor=${encodeURIComponent(second.nextCursor!)}`);
    expect(third.data.map((r) => r.id)).toEqual([w.m2, w.m1]);
    expect(third.nextCursor).toBeNull();
    expect((await list(w.t)).data).toHaveLength(8);
  });

  it("an inbound message is readable by id, with its direction, sender and text", async () => {
    const w = await world();
    const res = await api(`/messages/${w.i1}`, w.t.key);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      id: w.i1,
      direction: "inbound",
      channelNumberId: w.a,
      from: "5511977770001",
      type: "text",
      text: { body: "hello" },
      status: "received",
      receivedAt: expect.any(String),
    });
  });

  it("never shows another workspace's messages; its ids are 404 and its cursors are refused", async () => {
    const w = await world();
    const other = await createTenant();
    expect((await list(other)).data).toEqual([]);
    for (const id of [w.m1, w.i1]) {
      await expectError(await api(`/messages/${id}`, other.key), 404, "not_found");
      await expectError(await api(`/messages/${id}/events`, other.key), 404, "not_found");
    }
    const page = await list(w.t, "?limit=1");
    const err = await expectError(
      await api(`/messages?cursor=${encodeURIComponent(page.nextCursor!)}`, other.key),
      400,
      "invalid_request",
    );
    expect(err.error.details?.[0]?.path).toBe("query.cursor");
  });

  it("refuses bad filters with 400 and names the parameter", async () => {
    const t = await createTenant();
    const cases: [string, string][] = [
      ["?direction=sideways", "query.direction"],
      ["?status=delivered", "query.status"],
      ["?channelNumberId=not-a-uuid", "query.channelNumberId"],
      ["?to=%2B5511999998888", "query.to"],
      ["?from=%3Cscript%3E", "query.from"],
      ["?createdAfter=yesterday", "query.createdAfter"],
      ["?createdBefore=2026-13-01T00:00:00Z", "query.createdBefore"],
      ["?createdAfter=2026-11-02T00:00:00Z&createdBefore=2026-11-01T00:00:00Z", "query.createdBefore"],
      ["?to=5511999998888&from=5511977776666", "query.from"],
      ["?to=5511999998888&direction=inbound", "query.to"],
      ["?status=received&direction=outbound", "query.status"],
      ["?status=sent&direction=inbound", "query.status"],
      ["?limit=0", "query.limit"],
      ["?limit=101", "query.limit"],
      ["?limit=ten", "query.limit"],
      ["?cursor=not-a-cursor", "query.cursor"],
    ];
    for (const [query, path] of cases) {
      const err = await expectError(await api(`/messages${query}`, t.key), 400, "invalid_request");
      expect(
        err.error.details?.map((d) => d.path),
        query,
      ).toContain(path);
    }
  });
});

describe("GET /messages/{id}/events", () => {
  it("gives the status timeline, oldest first, with the error of a failure", async () => {
    const w = await world();
    const sent = await json<{ timeline: { status: string }[]; deliveries: unknown[] }>(
      await api(`/messages/${w.m1}/events`, w.t.key),
    );
    // The sandbox then reports delivered and read, as the operator would (seconds later, so the clock moved here).
    expect(sent.timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "delivered", "read"]);
    expect(sent.deliveries).toEqual([]);
    const failed = await json<{ timeline: { status: string; error: { code: string } | null }[] }>(
      await api(`/messages/${w.m2}/events`, w.t.key),
    );
    expect(failed.timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "failed"]);
    expect(failed.timeline.at(-1)!.error).toMatchObject({ code: "service_window_closed" });
    const received = await json<{ timeline: { status: string }[] }>(await api(`/messages/${w.i1}/events`, w.t.key));
    expect(received.timeline.map((e) => e.status)).toEqual(["received"]);
  });
});
