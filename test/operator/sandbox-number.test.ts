import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { MAX_TEST_CONTACTS_PER_NUMBER } from "../../src/db/sandbox-test-contacts";
import { api, expectError, json } from "../helpers/http";
import { createTenant, TEST_CONTACT, TEST_CONTACT_2 } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";

interface MessageView {
  status: string;
  error: { code: string } | null;
  deliveredAt: string | null;
  readAt: string | null;
}

const STRANGER = "5511955554444";

async function sendTo(key: string, numberId: string, to: string): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, "Hello", to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

async function settled(key: string, jobId: string, until: (m: MessageView) => boolean): Promise<MessageView> {
  let last: MessageView | undefined;
  await vi.waitFor(
    async () => {
      last = await json<MessageView>(await api(`/messages/${jobId}`, key));
      expect(until(last)).toBe(true);
    },
    { timeout: 12_000, interval: 200 },
  );
  return last!;
}

const contactsOf = (key: string, numberId: string) =>
  api(`/sandbox/test-contacts?channelNumberId=${numberId}`, key).then((r) =>
    json<{ data: { phone: string }[]; limit: number }>(r),
  );

describe("a sandbox number behaves like a live one", () => {
  it("reports delivered and then read, as operator status updates", async () => {
    const t = await createTenant();
    const jobId = await sendTo(t.key, t.numberId, TEST_CONTACT);
    const read = await settled(t.key, jobId, (m) => m.readAt !== null);
    expect(read).toMatchObject({ status: "sent", error: null });
    expect(Date.parse(read.deliveredAt!)).toBeLessThan(Date.parse(read.readAt!));
  });

  it("fails a recipient who has not written in 24 hours with service_window_closed, after accepting it, as the operator does", async () => {
    const t = await createTenant();
    const jobId = await sendTo(t.key, t.numberId, STRANGER);
    const failed = await settled(t.key, jobId, (m) => m.status === "failed");
    expect(failed.error).toMatchObject({ code: "service_window_closed" });
    const timeline = await json<{ timeline: { status: string }[] }>(await api(`/messages/${jobId}/events`, t.key));
    expect(timeline.timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "failed"]);
  });

  it("sends once the recipient has written (the window is open)", async () => {
    const t = await createTenant();
    const inbound = await api("/sandbox/inbound", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, from: STRANGER, text: { body: "Hi" } },
    });
    expect(inbound.status).toBe(202);
    const jobId = await sendTo(t.key, t.numberId, STRANGER);
    expect(await settled(t.key, jobId, (m) => m.deliveredAt !== null)).toMatchObject({ status: "sent", error: null });
  });

  it("sends to a test contact outside the window; unmarked, the window applies again", async () => {
    const t = await createTenant();
    const added = await api("/sandbox/test-contacts", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, phone: STRANGER },
    });
    expect(added.status).toBe(201);
    expect(await json(added)).toMatchObject({ phone: STRANGER, createdAt: expect.any(String) });
    // Adding again changes nothing.
    expect(
      (
        await api("/sandbox/test-contacts", t.key, {
          method: "POST",
          json: { channelNumberId: t.numberId, phone: STRANGER },
        })
      ).status,
    ).toBe(200);
    expect((await contactsOf(t.key, t.numberId)).data.map((c) => c.phone).sort()).toEqual(
      [STRANGER, TEST_CONTACT, TEST_CONTACT_2].sort(),
    );
    const first = await sendTo(t.key, t.numberId, STRANGER);
    expect(await settled(t.key, first, (m) => m.deliveredAt !== null)).toMatchObject({ status: "sent" });

    expect((await api(`/sandbox/test-contacts/${t.numberId}/${STRANGER}`, t.key, { method: "DELETE" })).status).toBe(
      204,
    );
    await expectError(
      await api(`/sandbox/test-contacts/${t.numberId}/${STRANGER}`, t.key, { method: "DELETE" }),
      404,
      "not_found",
    );
    const second = await sendTo(t.key, t.numberId, STRANGER);
    expect((await settled(t.key, second, (m) => m.status === "failed")).error).toMatchObject({
      code: "service_window_closed",
    });
  });
});

describe("test contacts", () => {
  it(`are bounded: at most ${MAX_TEST_CONTACTS_PER_NUMBER} per number, the next one refused with the uniform error and nothing stored`, async () => {
    const t = await createTenant();
    // createTenant made two.
    for (let i = 2; i < MAX_TEST_CONTACTS_PER_NUMBER; i++) {
      const res = await api("/sandbox/test-contacts", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, phone: `55119000000${String(i).padStart(2, "0")}` },
      });
      expect(res.status).toBe(201);
    }
    const err = await expectError(
      await api("/sandbox/test-contacts", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, phone: "5511977770000" },
      }),
      400,
      "invalid_request",
    );
    expect(err.error.details).toEqual([expect.objectContaining({ path: "phone", rule: "max_test_contacts" })]);
    expect((await contactsOf(t.key, t.numberId)).data).toHaveLength(MAX_TEST_CONTACTS_PER_NUMBER);
  });

  it("refuse bad input, a foreign number (like an unknown one) and a live number, changing nothing", async () => {
    const [t, other] = await Promise.all([createTenant(), createTenant()]);
    const post = (body: unknown) => api("/sandbox/test-contacts", t.key, { method: "POST", json: body });
    await expectError(await post({ channelNumberId: t.numberId, phone: "+5511955554444" }), 400, "invalid_request");
    await expectError(await post({ channelNumberId: t.numberId, phone: STRANGER, extra: 1 }), 400, "invalid_request");
    await expectError(await post({ channelNumberId: other.numberId, phone: STRANGER }), 404, "not_found");
    await expectError(await api(`/sandbox/test-contacts?channelNumberId=${other.numberId}`, t.key), 404, "not_found");
    await env.DB.prepare("UPDATE channel_numbers SET upstream_type = 'cloud' WHERE id = ?").bind(t.numberId).run();
    await expectError(await post({ channelNumberId: t.numberId, phone: STRANGER }), 403, "forbidden");
    await env.DB.prepare("UPDATE channel_numbers SET upstream_type = 'sandbox' WHERE id = ?").bind(t.numberId).run();
    const usual = [TEST_CONTACT, TEST_CONTACT_2].sort();
    expect((await contactsOf(t.key, t.numberId)).data.map((c) => c.phone).sort()).toEqual(usual);
    expect((await contactsOf(other.key, other.numberId)).data.map((c) => c.phone).sort()).toEqual(usual);
  });
});
