import { beforeEach, describe, expect, it } from "vitest";
import { admin, api, expectError, json } from "../helpers/http";
import { createTenant, type Tenant } from "../helpers/fixtures";
import { mockNetworkPerTest } from "../helpers/webhook-net";

const HOST = "hooks.acme-shop.com";
const URL_OK = `https://${HOST}/messaging`;

interface WebhookView {
  id: string;
  channelNumberId: string;
  url: string;
  status: string;
  failingSince: string | null;
  disabledAt: string | null;
  createdAt: string;
  updatedAt: string;
  secret?: string;
}

const net = mockNetworkPerTest();

/** The workspace under test and another one, fresh for each test. */
async function twoTenants(): Promise<{ tenant: Tenant; other: Tenant }> {
  const [tenant, other] = await Promise.all([createTenant(), createTenant()]);
  return { tenant, other };
}

beforeEach(() => {
  net.dns.set(HOST, ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]);
});

const configure = (key: string, json: unknown) => api("/webhooks", key, { method: "POST", json });

describe("POST /webhooks", () => {
  it("creates the number's webhook and returns its secret once", async () => {
    const tenant = await createTenant();
    const numberId = tenant.numberId;
    const res = await configure(tenant.key, { channelNumberId: numberId, url: URL_OK });
    expect(res.status).toBe(201);
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    const body = await json<WebhookView>(res);
    expect(body).toMatchObject({
      channelNumberId: numberId,
      url: URL_OK,
      status: "enabled",
      failingSince: null,
      disabledAt: null,
    });
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(atob(body.secret!.slice("whsec_".length)).length).toBeGreaterThanOrEqual(24);
    // The host was resolved (A and AAAA) before it was accepted.
    expect(net.dnsQueries.sort()).toEqual([`${HOST} A`, `${HOST} AAAA`]);

    const listed = await api("/webhooks", tenant.key);
    expect(listed.status).toBe(200);
    const text = await listed.text();
    expect(text).not.toContain(body.secret!);
    expect(text).not.toContain("secret");
    const list = JSON.parse(text) as { data: WebhookView[]; nextCursor: string | null };
    const { secret: _secret, ...view } = body;
    expect(list.data).toEqual([view]);
  });

  it("replaces the webhook: same id, new URL, new secret, one webhook per number", async () => {
    const tenant = await createTenant();
    const numberId = tenant.numberId;
    const first = await json<WebhookView>(await configure(tenant.key, { channelNumberId: numberId, url: URL_OK }));
    const second = await configure(tenant.key, { channelNumberId: numberId, url: `https://${HOST}/v2` });
    expect(second.status).toBe(201);
    const replaced = await json<WebhookView>(second);
    expect(replaced.id).toBe(first.id);
    expect(replaced.url).toBe(`https://${HOST}/v2`);
    expect(replaced.secret).not.toBe(first.secret);
    expect(replaced.createdAt).toBe(first.createdAt);

    const list = await json<{ data: WebhookView[] }>(await api("/webhooks", tenant.key));
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ id: first.id, channelNumberId: numberId, url: `https://${HOST}/v2` });
  });

  it("stores the URL in its normal form", async () => {
    const tenant = await createTenant();
    const res = await configure(tenant.key, {
      channelNumberId: tenant.numberId,
      url: `HTTPS://Hooks.Acme-Shop.com:443/a/../messaging`,
    });
    expect(res.status).toBe(201);
    expect((await json<WebhookView>(res)).url).toBe(URL_OK);
  });

  describe("refuses invalid input with 400 naming the field", () => {
    const cases: [string, (numberId: string) => unknown, string, RegExp | string | null][] = [
      ["missing url", (numberId) => ({ channelNumberId: numberId }), "url", "required"],
      ["missing channelNumberId", () => ({ url: URL_OK }), "channelNumberId", "required"],
      [
        "channelNumberId that is not a UUID",
        () => ({ channelNumberId: "123", url: URL_OK }),
        "channelNumberId",
        /UUID/,
      ],
      // Only the path: src/lib/validation.ts reports every invalid_type as "required" (zod 4 omits issue.input).
      ["url of the wrong type", (numberId) => ({ channelNumberId: numberId, url: 42 }), "url", null],
      [
        "unknown fields",
        (numberId) => ({ channelNumberId: numberId, url: URL_OK, secret: "mine" }),
        "secret",
        "unknown_field",
      ],
      [
        "a 5 KB URL",
        (numberId) => ({ channelNumberId: numberId, url: `${URL_OK}?q=${"a".repeat(5_000)}` }),
        "url",
        /longer than 2048/,
      ],
      ["ftp://", (numberId) => ({ channelNumberId: numberId, url: `ftp://${HOST}/` }), "url", /must use https/],
      [
        "http:// without the development setting",
        (numberId) => ({ channelNumberId: numberId, url: `http://${HOST}/` }),
        "url",
        /must use https/,
      ],
      [
        "http://localhost without the development setting",
        (numberId) => ({ channelNumberId: numberId, url: "http://localhost:8788/" }),
        "url",
        /must use https/,
      ],
      ["userinfo", (numberId) => ({ channelNumberId: numberId, url: `https://user:pass@${HOST}/` }), "url", /Userinfo/],
      [
        "a relative URL",
        (numberId) => ({ channelNumberId: numberId, url: "/hooks" }),
        "url",
        /not a valid absolute URL/,
      ],
      [
        "decimal IPv4",
        (numberId) => ({ channelNumberId: numberId, url: "https://2130706433/" }),
        "url",
        /127\.0\.0\.1 \(loopback\)/,
      ],
      [
        "octal IPv4",
        (numberId) => ({ channelNumberId: numberId, url: "https://0177.0.0.1/" }),
        "url",
        /127\.0\.0\.1 \(loopback\)/,
      ],
      [
        "hex IPv4",
        (numberId) => ({ channelNumberId: numberId, url: "https://0x7f.0x0.0x0.0x1/" }),
        "url",
        /127\.0\.0\.1 \(loopback\)/,
      ],
      [
        "short IPv4",
        (numberId) => ({ channelNumberId: numberId, url: "https://10.1/" }),
        "url",
        /10\.0\.0\.1 \(private network\)/,
      ],
      [
        "IPv4-mapped IPv6",
        (numberId) => ({ channelNumberId: numberId, url: "https://[::ffff:127.0.0.1]/" }),
        "url",
        /IPv4-mapped 127\.0\.0\.1/,
      ],
      [
        "NAT64 IPv6",
        (numberId) => ({ channelNumberId: numberId, url: "https://[64:ff9b::7f00:1]/" }),
        "url",
        /NAT64 127\.0\.0\.1/,
      ],
      [
        "6to4 IPv6",
        (numberId) => ({ channelNumberId: numberId, url: "https://[2002:7f00:1::]/" }),
        "url",
        /6to4 127\.0\.0\.1/,
      ],
      [
        "an IPv6 zone id",
        (numberId) => ({ channelNumberId: numberId, url: "https://[fe80::1%25eth0]/" }),
        "url",
        /not a valid absolute URL/,
      ],
      [
        "the metadata address",
        (numberId) => ({ channelNumberId: numberId, url: "https://169.254.169.254/latest/meta-data/" }),
        "url",
        /link-local/,
      ],
      ["IPv6 loopback", (numberId) => ({ channelNumberId: numberId, url: "https://[::1]/" }), "url", /loopback/],
      [
        "a .internal name",
        (numberId) => ({ channelNumberId: numberId, url: "https://billing.internal/" }),
        "url",
        /local, internal or special-use/,
      ],
      [
        "a cloud metadata name",
        (numberId) => ({ channelNumberId: numberId, url: "https://metadata.google.internal/" }),
        "url",
        /metadata/,
      ],
      ["localhost", (numberId) => ({ channelNumberId: numberId, url: "https://localhost/" }), "url", /local/],
    ];

    it.each(cases)("%s", async (_name, body, path, expected) => {
      const tenant = await createTenant();
      const res = await configure(tenant.key, body(tenant.numberId));
      const err = await expectError(res, 400, "invalid_request");
      const detail = err.error.details?.[0];
      expect(detail?.path).toBe(path);
      if (typeof expected === "string") expect(detail?.rule).toBe(expected);
      else if (expected) expect(detail?.message).toMatch(expected);
      // Refused from the text alone: nothing was resolved, nothing was called.
      expect(net.dnsQueries).toEqual([]);
      expect(net.seen).toEqual([]);
    });

    it("a host name that resolves to a private address", async () => {
      const tenant = await createTenant();
      net.dns.set("intranet-gw.acme-shop.com", ["93.184.216.35", "10.0.0.7"]);
      const res = await configure(tenant.key, {
        channelNumberId: tenant.numberId,
        url: "https://intranet-gw.acme-shop.com/hook",
      });
      const err = await expectError(res, 400, "invalid_request");
      expect(err.error.details?.[0]).toEqual({
        path: "url",
        rule: "ssrf",
        message: "The host resolves to a non-public address: 10.0.0.7 (private network).",
      });
    });

    it("a host name that resolves to an IPv6 loopback only over AAAA", async () => {
      const tenant = await createTenant();
      net.dns.set("v6.acme-shop.com", ["93.184.216.36", "::1"]);
      const res = await configure(tenant.key, { channelNumberId: tenant.numberId, url: "https://v6.acme-shop.com/" });
      const err = await expectError(res, 400, "invalid_request");
      expect(err.error.details?.[0]?.message).toMatch(/::1 \(loopback\)/);
    });

    it("a body that is not JSON", async () => {
      const tenant = await createTenant();
      const res = await api("/webhooks", tenant.key, {
        method: "POST",
        headers: { "Content-Type": "text/plain" },
        body: "url=x",
      });
      await expectError(res, 400, "invalid_request");
    });

    it("a refused URL leaves the existing webhook untouched", async () => {
      const tenant = await createTenant();
      const numberId = tenant.numberId;
      const created = await json<WebhookView>(await configure(tenant.key, { channelNumberId: numberId, url: URL_OK }));
      await expectError(
        await configure(tenant.key, { channelNumberId: numberId, url: "https://[::1]/" }),
        400,
        "invalid_request",
      );
      const list = await json<{ data: WebhookView[] }>(await api("/webhooks", tenant.key));
      expect(list.data.find((w) => w.id === created.id)).toMatchObject({ url: URL_OK, updatedAt: created.updatedAt });
    });
  });

  describe("answers 404 alike for every number that is not a connected number of the workspace", () => {
    it("an unknown number", async () => {
      const tenant = await createTenant();
      const res = await configure(tenant.key, { channelNumberId: "00000000-0000-4000-8000-000000000000", url: URL_OK });
      const err = await expectError(res, 404, "not_found");
      expect(err.error.message).toBe("Channel number not found.");
    });

    it("another workspace's number, which keeps no trace", async () => {
      const { tenant, other } = await twoTenants();
      const res = await configure(tenant.key, { channelNumberId: other.numberId, url: URL_OK });
      const err = await expectError(res, 404, "not_found");
      expect(err.error.message).toBe("Channel number not found.");
      const theirs = await json<{ data: WebhookView[] }>(await api("/webhooks", other.key));
      expect(theirs.data).toEqual([]);
    });

    it("a disconnected number", async () => {
      const tenant = await createTenant();
      const numberId = tenant.numberId;
      expect((await admin(`/channel-numbers/${numberId}`, { method: "DELETE" })).status).toBe(204);
      const err = await expectError(
        await configure(tenant.key, { channelNumberId: numberId, url: URL_OK }),
        404,
        "not_found",
      );
      expect(err.error.message).toBe("Channel number not found.");
    });
  });
});

describe("webhook extension routes", () => {
  it("answer 404 for an unknown, malformed or foreign webhook id", async () => {
    const { tenant, other } = await twoTenants();
    const theirs = await json<WebhookView>(
      await configure(other.key, { channelNumberId: other.numberId, url: URL_OK }),
    );
    for (const id of [theirs.id, "00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      await expectError(await api(`/webhooks/${id}/deliveries`, tenant.key), 404, "not_found");
      await expectError(await api(`/webhooks/${id}/test`, tenant.key, { method: "POST" }), 404, "not_found");
      await expectError(
        await api(`/webhooks/${id}/deliveries/some-event/replay`, tenant.key, { method: "POST" }),
        404,
        "not_found",
      );
    }
  });

  it("replay of an event the webhook never had is 404", async () => {
    const tenant = await createTenant();
    const mine = await json<WebhookView>(
      await configure(tenant.key, { channelNumberId: tenant.numberId, url: URL_OK }),
    );
    const err = await expectError(
      await api(`/webhooks/${mine.id}/deliveries/00000000-0000-4000-8000-000000000000/replay`, tenant.key, {
        method: "POST",
      }),
      404,
      "not_found",
    );
    expect(err.error.message).toBe("Event not found.");
  });

  it("are in the OpenAPI document next to the SPEC operations", async () => {
    const res = await api("/openapi.json", null);
    const doc = await json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(res);
    // SPEC's 400, 401 and 404, plus the abuse limit (429) and a read-only key's refusal (403
    // insufficient_role: key roles are an extension SPEC leaves open; developer and owner keys never get it here).
    expect(Object.keys(doc.paths["/webhooks"]!.post!.responses).sort()).toEqual([
      "201",
      "400",
      "401",
      "403",
      "404",
      "429",
    ]);
    expect(doc.paths["/webhooks/{id}/deliveries"]?.get).toBeDefined();
    expect(doc.paths["/webhooks/{id}/deliveries/{eventId}/replay"]?.post).toBeDefined();
    expect(doc.paths["/webhooks/{id}/test"]?.post).toBeDefined();
  });
});
