import { afterEach, describe, expect, it, vi } from "vitest";
import { answerAtEdge } from "../helpers/edge";
import { fakeOperatorAccount, operatorNumberUrl } from "../helpers/operator";
import { admin, api, expectError, json } from "../helpers/http";
import { createTenant, createWorkspace } from "../helpers/fixtures";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("admin API", () => {
  it("creates a workspace with its plan limits and reads it back", async () => {
    const res = await admin("/workspaces", { method: "POST", json: { name: "Globex", plan: "free" } });
    expect(res.status).toBe(201);
    const created = await json<{ id: string }>(res);
    expect(created).toEqual({
      id: expect.any(String),
      name: "Globex",
      plan: "free",
      monthlyMessageQuota: 1000,
      quotaOverridden: false,
      maxNumbers: 1,
      createdAt: expect.any(String),
    });
    expect(await json(await admin(`/workspaces/${created.id}`))).toEqual(created);
  });

  it("refuses bad workspace input and unknown plans", async () => {
    await expectError(await admin("/workspaces", { method: "POST", json: { plan: "free" } }), 400, "invalid_request");
    await expectError(
      await admin("/workspaces", { method: "POST", json: { name: "x", plan: "platinum" } }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin("/workspaces", { method: "POST", json: { name: "x", plan: "free", monthlyMessageQuota: -1 } }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin("/workspaces", { method: "POST", json: { name: "x", plan: "free", extra: 1 } }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin("/workspaces", { method: "POST", body: "{", headers: { "Content-Type": "application/json" } }),
      400,
      "invalid_request",
    );
    await expectError(await admin(`/workspaces/${crypto.randomUUID()}`), 404, "not_found");
  });

  it("shows a key once, lists keys without secrets, and revokes", async () => {
    const workspaceId = await createWorkspace();
    const created = await json<{ id: string; key: string; lastFour: string }>(
      await admin(`/workspaces/${workspaceId}/api-keys`, { method: "POST", json: { name: "ci" } }),
    );
    expect(created.key).toMatch(/^msg_live_[A-Za-z0-9_-]{43}$/);
    expect(created.lastFour).toBe(created.key.slice(-4));
    const list = await admin(`/workspaces/${workspaceId}/api-keys`);
    const text = await list.text();
    expect(text).not.toContain(created.key);
    expect(JSON.parse(text).data).toEqual([
      expect.objectContaining({ id: created.id, revokedAt: null, lastFour: created.lastFour }),
    ]);

    expect((await admin(`/api-keys/${created.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await admin(`/api-keys/${created.id}`, { method: "DELETE" })).status).toBe(204);
    await expectError(await admin(`/api-keys/${crypto.randomUUID()}`, { method: "DELETE" }), 404, "not_found");
    await expectError(await admin("/api-keys/not-a-uuid", { method: "DELETE" }), 404, "not_found");
  });

  it("connects sandbox and live numbers, never returns credentials, enforces the plan's maximum", async () => {
    const workspaceId = await createWorkspace({ plan: "pro" });
    const token = "EAAG-super-secret-operator-token-1234567890";
    // The operator confirms that the token controls the phone number id.
    answerAtEdge((input, init) => {
      const req = new Request(input, init);
      if (req.url !== operatorNumberUrl("1099887766")) throw new Error(`unexpected outbound request: ${req.url}`);
      return Response.json({ id: "1099887766", display_phone_number: "+1 555-123-0000" });
    });
    const live = await admin(`/workspaces/${workspaceId}/channel-numbers`, {
      method: "POST",
      json: {
        displayPhoneNumber: "+15551230000",
        upstream: { type: "cloud", phoneNumberId: "1099887766", accessToken: token },
      },
    });
    expect(live.status).toBe(201);
    const listed = await (await admin(`/workspaces/${workspaceId}/channel-numbers`)).text();
    expect(listed).not.toContain(token);
    expect(JSON.parse(listed).data[0]).toMatchObject({
      upstream: { type: "cloud", phoneNumberId: "1099887766" },
      status: "connected",
    });

    // The same operator number cannot be connected twice.
    await expectError(
      await admin(`/workspaces/${workspaceId}/channel-numbers`, {
        method: "POST",
        json: {
          displayPhoneNumber: "+15551230000",
          upstream: { type: "cloud", phoneNumberId: "1099887766", accessToken: token },
        },
      }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin(`/workspaces/${workspaceId}/channel-numbers`, {
        method: "POST",
        json: { displayPhoneNumber: "abc", upstream: { type: "pigeon" } },
      }),
      400,
      "invalid_request",
    );

    const free = await createTenant({ plan: "free" });
    await expectError(
      await admin(`/workspaces/${free.workspaceId}/channel-numbers`, {
        method: "POST",
        json: { displayPhoneNumber: "15550009999", upstream: { type: "sandbox" } },
      }),
      403,
      "forbidden",
    );
  });

  it("connects a live number with its business account: the public API's checks, the account stored", async () => {
    const workspaceId = await createWorkspace({ plan: "pro" });
    const a = fakeOperatorAccount();
    const connect = (wabaId: string) =>
      admin(`/workspaces/${workspaceId}/channel-numbers`, {
        method: "POST",
        json: {
          displayPhoneNumber: "+15557770000",
          upstream: { type: "cloud", phoneNumberId: a.phoneNumberId, wabaId, accessToken: a.token },
        },
      });
    // A business account the number is not in: refused naming the field; nothing stored.
    const wrong = await expectError(await connect("999000111222"), 400, "invalid_request");
    expect(wrong.error.details).toEqual([
      expect.objectContaining({ path: "upstream.wabaId", rule: "upstream_verification" }),
    ]);
    expect((await json<{ data: unknown[] }>(await admin(`/workspaces/${workspaceId}/channel-numbers`))).data).toEqual(
      [],
    );

    const res = await connect(a.wabaId);
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await json(res)).toMatchObject({
      upstream: { type: "cloud", phoneNumberId: a.phoneNumberId, wabaId: a.wabaId },
    });
    expect(a.calls.slice(-3)).toEqual([
      `GET ${a.phoneNumberId}`,
      `GET ${a.wabaId}/phone_numbers`,
      `POST ${a.wabaId}/subscribed_apps`,
    ]);
    // Without wabaId, only the number's record is checked, as before: no account is stored.
    const b = fakeOperatorAccount();
    const plain = await admin(`/workspaces/${workspaceId}/channel-numbers`, {
      method: "POST",
      json: {
        displayPhoneNumber: "+15557770001",
        upstream: { type: "cloud", phoneNumberId: b.phoneNumberId, accessToken: b.token },
      },
    });
    expect(plain.status).toBe(201);
    expect(await json(plain)).toMatchObject({ upstream: { phoneNumberId: b.phoneNumberId, wabaId: null } });
    expect(b.calls).toEqual([`GET ${b.phoneNumberId}`]);
  });

  it("disconnecting a number takes it out of the public API at once", async () => {
    const t = await createTenant();
    expect((await api(`/channel-numbers/${t.numberId}`, t.key)).status).toBe(200);
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBe(204);
    expect((await api(`/channel-numbers/${t.numberId}`, t.key)).status).toBe(404);
    await expectError(await admin(`/channel-numbers/${crypto.randomUUID()}`, { method: "DELETE" }), 404, "not_found");
  });
});
