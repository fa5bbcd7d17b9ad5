import { describe, expect, it } from "vitest";
import { admin, api, call, expectError, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";

describe("a wrong method on a known path", () => {
  it.each([
    ["DELETE", "/api/v1/messages", "GET, HEAD, POST"],
    ["PUT", "/api/v1/messages/42ab2093-bbe3-8710-9a4a-492ccdac721d", "GET, HEAD"],
    ["PATCH", "/api/v1/webhooks", "GET, HEAD, POST"],
    ["GET", "/api/v1/webhooks/0d8f6a61-3c1b-4f39-a6b4-6e1f1c9b2a70/test", "POST"],
  ])("%s %s answers 405 with Allow: %s", async (method, path, allow) => {
    const t = await createTenant();
    const res = await call(path, { method, headers: { Authorization: `Bearer ${t.key}` } });
    expect(res.headers.get("Allow")).toBe(allow);
    const err = await expectError(res, 405, "method_not_allowed");
    expect(err.error.message).toContain(allow);
  });

  it("the same holds outside the API key's area (the reference page, the admin API)", async () => {
    const docs = await call("/docs", { method: "POST" });
    expect(docs.headers.get("Allow")).toBe("GET, HEAD");
    await expectError(docs, 405, "method_not_allowed");
    const adm = await admin("/workspaces", { method: "PUT" });
    expect(adm.headers.get("Allow")).toBe("POST");
    await expectError(adm, 405, "method_not_allowed");
  });

  it("an unknown path is still 404", async () => {
    const t = await createTenant();
    await expectError(await api("/nothing-here", t.key), 404, "not_found");
    await expectError(
      await call("/api/v1/messages/a/b", { method: "DELETE", headers: { Authorization: `Bearer ${t.key}` } }),
      404,
      "not_found",
    );
  });
});

describe("GET /", () => {
  it("points a client to the reference and the contract", async () => {
    const res = await call("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(res.headers.get("Link")).toBe('</docs>; rel="service-doc", </api/v1/openapi.json>; rel="service-desc"');
    expect(await json(res)).toEqual({
      name: "Messaging API",
      docs: "/docs",
      openapi: "/api/v1/openapi.json",
      api: "/api/v1",
    });
  });

  it("sends a browser to /docs", async () => {
    const res = await call("/", { headers: { Accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe("/docs");
  });
});

describe("a missing or malformed Idempotency-Key", () => {
  it("says what to send: one UUID per message, reused on retries", async () => {
    const t = await createTenant();
    const err = await expectError(await send(t.key, null, textMessage(t.numberId)), 400, "invalid_request");
    expect(err.error.message).toMatch(/Idempotency-Key header is required/);
    expect(err.error.message).toMatch(/UUID/);
    expect(err.error.details).toEqual([
      {
        path: "header.idempotency-key",
        rule: "required",
        message: expect.stringMatching(/new key for every message.*reuse the same key.*retry/),
      },
    ]);
    expect(await usedMessages(t.key)).toBe(0);
  });

  it("an empty or non-printable key names the rule and what to send", async () => {
    const t = await createTenant();
    const empty = await expectError(await send(t.key, "", textMessage(t.numberId)), 400, "invalid_request");
    expect(empty.error.details?.[0]).toMatchObject({ path: "header.idempotency-key", rule: "required" });
    const bad = await expectError(await send(t.key, "tab\there", textMessage(t.numberId)), 400, "invalid_request");
    expect(bad.error.details?.[0]).toMatchObject({
      path: "header.idempotency-key",
      rule: "format",
      message: expect.stringMatching(/printable ASCII.*UUID/),
    });
  });
});

describe("a number of another workspace", () => {
  /** The answer without its request id, which differs on every request. */
  async function answer(res: Response): Promise<{ status: number; error: Record<string, unknown> }> {
    const { error } = await json<{ error: Record<string, unknown> }>(res);
    const { requestId: _ignored, ...rest } = error;
    return { status: res.status, error: rest };
  }

  it("answers exactly like an unknown number on every endpoint: 403 to send from it, 404 to read or configure it", async () => {
    const [me, other] = await Promise.all([createTenant(), createTenant()]);
    const unknown = crypto.randomUUID();
    const cases: [string, (id: string) => Promise<Response>, number][] = [
      ["send", (id) => send(me.key, crypto.randomUUID(), textMessage(id)), 403],
      [
        "webhook",
        (id) =>
          api("/webhooks", me.key, {
            method: "POST",
            json: { channelNumberId: id, url: "https://hooks.example.com/in" },
          }),
        404,
      ],
      ["number", (id) => api(`/channel-numbers/${id}`, me.key), 404],
      [
        "inbound",
        (id) =>
          api("/sandbox/inbound", me.key, {
            method: "POST",
            json: { channelNumberId: id, from: "5511977776666", text: { body: "Hi" } },
          }),
        404,
      ],
    ];
    for (const [what, request, status] of cases) {
      const foreign = await answer(await request(other.numberId));
      expect(foreign.status, what).toBe(status);
      expect(foreign, what).toEqual(await answer(await request(unknown)));
    }
    expect(await usedMessages(me.key)).toBe(0);
  });
});

describe("a JSON syntax error", () => {
  it("says where it is (line, column and character) and changes nothing", async () => {
    const t = await createTenant();
    const body = '{\n  "channelNumberId": "x",\n  "to": "5511999998888",\n  "text": {"body": "hi"},\n}';
    const res = await send(t.key, crypto.randomUUID(), undefined, {
      body,
      headers: { "Content-Type": "application/json" },
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.message).toMatch(
      /^The request body is not valid JSON: .+ at line 5, column 1 \(character \d+\)\.$/,
    );
    expect(err.error.details).toEqual([
      { path: "(body)", rule: "json_syntax", message: expect.stringContaining("line 5, column 1") },
    ]);
    expect(await usedMessages(t.key)).toBe(0);
  });

  it("a body cut short points at its end", async () => {
    const t = await createTenant();
    const res = await api("/webhooks", t.key, {
      method: "POST",
      body: '{"channelNumberId": "',
      headers: { "Content-Type": "application/json" },
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.message).toContain("line 1, column 22 (character 21)");
  });
});

describe("a mistyped route", () => {
  it("names the closest route and its methods", async () => {
    const t = await createTenant();
    const err = await expectError(await api("/mesages", t.key), 404, "not_found");
    expect(err.error.message).toBe("No such route: GET /api/v1/mesages. Did you mean GET, POST /api/v1/messages?");
    const byId = await expectError(await api(`/mesages/${crypto.randomUUID()}/events`, t.key), 404, "not_found");
    expect(byId.error.message).toContain("Did you mean GET /api/v1/messages/:id/events?");
  });

  it("suggests nothing for a path that is not close to any route", async () => {
    const t = await createTenant();
    const err = await expectError(await api("/nothing-here", t.key), 404, "not_found");
    expect(err.error.message).toBe("No such route: GET /api/v1/nothing-here. The routes are listed at /docs.");
  });
});
