import { createExecutionContext, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { fromBase64, randomBytes, sha256Hex, toBase64 } from "../../src/lib/crypto";
import { openOperatorCredentials, openWebhookSecret } from "../../src/lib/sealed-secrets";
import { open } from "../../src/lib/secret-box";
import { BASE, admin, api, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { accepted, connectLiveNumber, mockOperator } from "../helpers/operator";
import { answers, mockNetwork } from "../helpers/webhook-net";
import { send, textMessage } from "../helpers/send";
import { fakeClock } from "../helpers/clock";

afterEach(() => {
  vi.restoreAllMocks();
});

const KEY_1 = env.CREDENTIALS_ENCRYPTION_KEY;
const KEY_2 = toBase64(randomBytes(32));

/** How main sealed before this change (v1: the master key itself, no additional data). */
async function sealV1(base64Key: string, plaintext: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", fromBase64(base64Key), "AES-GCM", false, ["encrypt"]);
  const iv = randomBytes(12);
  const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(plaintext));
  return `v1.${toBase64(iv)}.${toBase64(ct)}`;
}

const numberRow = (id: string) =>
  env.DB.prepare("SELECT * FROM channel_numbers WHERE id = ?")
    .bind(id)
    .first<{ id: string; upstream_credentials: string }>();
const webhookRow = (id: string) =>
  env.DB.prepare("SELECT * FROM webhooks WHERE id = ?").bind(id).first<{ id: string; sealed_secret: string }>();

async function withWebhook(host = `h-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`) {
  const t = await createTenant();
  const net = mockNetwork();
  net.dns.set(host, ["93.184.216.34"]);
  const res = await api("/webhooks", t.key, {
    method: "POST",
    json: { channelNumberId: t.numberId, url: `https://${host}/hook` },
  });
  const { id, secret, url } = await json<{ id: string; secret: string; url: string }>(res);
  return { t, net, id, secret, url };
}

/** The admin re-seal endpoint through the real fetch handler, with the given key ring. */
async function reseal(ring: { CREDENTIALS_ENCRYPTION_KEY: string; CREDENTIALS_ENCRYPTION_KEYS_OLD?: string }) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}/admin/v1/secrets/reseal?limit=500`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` },
    }),
    { ...env, ...ring },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(res.status).toBe(200);
  type Counts = { upstreamCredentials: number; webhookSecrets: number };
  return json<{ resealed: Counts; unreadable: { table: string; id: string }[]; remaining: Counts }>(res);
}

describe("what D1 holds", () => {
  it("an API key only as its SHA-256", async () => {
    const workspaceId = await createWorkspace();
    const { key, id } = await createKey(workspaceId);
    const row = await env.DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(id).first<Record<string, unknown>>();
    expect(row!.key_hash).toBe(await sha256Hex(key));
    const secretPart = key.slice(`${env.API_KEY_PREFIX}live_`.length);
    for (const value of Object.values(row!)) expect(String(value)).not.toContain(secretPart.slice(0, 12));
    expect(row!.last_four).toBe(key.slice(-4));
  });

  it("an operator token only sealed (v2, current key), bound to its number", async () => {
    const workspaceId = await createWorkspace();
    const { numberId, token } = await connectLiveNumber(workspaceId);
    const other = await connectLiveNumber(workspaceId);
    const row = (await numberRow(numberId))!;
    expect(row.upstream_credentials).toMatch(/^v2\.[0-9a-f]{16}\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
    expect(row.upstream_credentials).not.toContain(token);
    expect(row.upstream_credentials).not.toContain(btoa(token).slice(0, 16));
    expect(await openOperatorCredentials(env, row)).toEqual({ accessToken: token });
    // Copied into another number's row, or read for another purpose, it does not open.
    await expect(
      openOperatorCredentials(env, { id: other.numberId, upstream_credentials: row.upstream_credentials }),
    ).rejects.toThrow();
    await expect(open(env, "webhook-secret", numberId, row.upstream_credentials)).rejects.toThrow();
  });

  it("a webhook secret only sealed, bound to its webhook: a copy in another webhook's row signs nothing", async () => {
    const a = await withWebhook();
    const b = await withWebhook();
    try {
      const rowA = (await webhookRow(a.id))!;
      expect(rowA.sealed_secret).toMatch(/^v2\./);
      expect(rowA.sealed_secret).not.toContain(a.secret.slice("whsec_".length, 20));
      expect(await openWebhookSecret(env, rowA)).toBe(a.secret);

      const ownB = (await webhookRow(b.id))!.sealed_secret;
      await env.DB.prepare("UPDATE webhooks SET sealed_secret = ? WHERE id = ?").bind(rowA.sealed_secret, b.id).run();
      b.net.receivers.set(b.url, answers(200));
      expect((await api(`/webhooks/${b.id}/test`, b.t.key, { method: "POST" })).status).toBe(202);
      await vi.waitFor(
        async () => {
          const log = await json<{ data: { error: string | null }[] }>(
            await api(`/webhooks/${b.id}/deliveries`, b.t.key),
          );
          expect(log.data.at(-1)?.error).toMatch(/Internal error while signing/);
        },
        { timeout: 15_000, interval: 100 },
      );
      expect(b.net.seen).toEqual([]);
      // With its own sealed secret back, the retry goes out, signed with B's secret.
      await env.DB.prepare("UPDATE webhooks SET sealed_secret = ? WHERE id = ?").bind(ownB, b.id).run();
      await vi.waitFor(() => expect(b.net.seen).toHaveLength(1), { timeout: 15_000, interval: 100 });
    } finally {
      a.net.restore();
      b.net.restore();
    }
  });
});

describe("values sealed before rotation existed (v1) keep working, and re-seal to v2", () => {
  it("a v1 operator token is used for sends", async () => {
    // A clock far ahead: the number's alarm then runs only when the test runs it.
    fakeClock(Date.UTC(2043, 0, 1));
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    await env.DB.prepare("UPDATE channel_numbers SET upstream_credentials = ? WHERE id = ?")
      .bind(await sealV1(KEY_1, JSON.stringify({ accessToken: "EAAG-legacy-v1-token" })), number.numberId)
      .run();
    const calls = mockOperator(() => accepted("wamid.V1"));
    expect((await send(key, crypto.randomUUID(), textMessage(number.numberId))).status).toBe(201);
    await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    expect(calls.map((c) => c.auth)).toEqual(["Bearer EAAG-legacy-v1-token"]);
  });

  it("a v1 webhook secret signs deliveries; re-sealing turns it into v2 without changing the secret", async () => {
    const w = await withWebhook();
    try {
      await env.DB.prepare("UPDATE webhooks SET sealed_secret = ? WHERE id = ?")
        .bind(await sealV1(KEY_1, w.secret), w.id)
        .run();
      expect(await openWebhookSecret(env, (await webhookRow(w.id))!)).toBe(w.secret);

      const result = await reseal({ CREDENTIALS_ENCRYPTION_KEY: KEY_1 });
      expect(result.resealed.webhookSecrets).toBeGreaterThanOrEqual(1);
      expect(result.remaining).toEqual({ upstreamCredentials: 0, webhookSecrets: 0 });
      const row = (await webhookRow(w.id))!;
      expect(row.sealed_secret).toMatch(/^v2\./);
      expect(await openWebhookSecret(env, row)).toBe(w.secret);
    } finally {
      w.net.restore();
    }
  });
});

describe("key rotation", () => {
  it("the new key seals, the old key still opens, re-sealing moves every value to the new key, then the old key can go", async () => {
    const w = await withWebhook();
    const workspaceId = await createWorkspace();
    const number = await connectLiveNumber(workspaceId);
    const rotating = { CREDENTIALS_ENCRYPTION_KEY: KEY_2, CREDENTIALS_ENCRYPTION_KEYS_OLD: ` ${KEY_1} ` };
    try {
      // Before re-sealing: values under KEY_1 open with the rotating ring.
      expect(await openWebhookSecret(rotating, (await webhookRow(w.id))!)).toBe(w.secret);
      // Without the old key they do not.
      await expect(openWebhookSecret({ CREDENTIALS_ENCRYPTION_KEY: KEY_2 }, (await webhookRow(w.id))!)).rejects.toThrow(
        /neither/,
      );

      let result = await reseal(rotating);
      while (result.remaining.upstreamCredentials + result.remaining.webhookSecrets > result.unreadable.length)
        result = await reseal(rotating);
      expect(result.unreadable).toEqual([]);
      expect(result.remaining).toEqual({ upstreamCredentials: 0, webhookSecrets: 0 });

      const keyTwoOnly = { CREDENTIALS_ENCRYPTION_KEY: KEY_2 };
      expect(await openWebhookSecret(keyTwoOnly, (await webhookRow(w.id))!)).toBe(w.secret);
      expect(await openOperatorCredentials(keyTwoOnly, (await numberRow(number.numberId))!)).toEqual({
        accessToken: number.token,
      });
      await expect(
        openWebhookSecret({ CREDENTIALS_ENCRYPTION_KEY: KEY_1 }, (await webhookRow(w.id))!),
      ).rejects.toThrow();

      // A ring that has lost a key reports those values as unreadable and leaves them alone.
      const lost = await reseal({ CREDENTIALS_ENCRYPTION_KEY: toBase64(randomBytes(32)) });
      expect(lost.unreadable).toContainEqual({ table: "webhooks", id: w.id });
      expect(lost.resealed).toEqual({ upstreamCredentials: 0, webhookSecrets: 0 });
      expect(await openWebhookSecret(keyTwoOnly, (await webhookRow(w.id))!)).toBe(w.secret);
    } finally {
      // Back under the test key, for the rest of the suite.
      await reseal({ CREDENTIALS_ENCRYPTION_KEY: KEY_1, CREDENTIALS_ENCRYPTION_KEYS_OLD: KEY_2 });
      w.net.restore();
    }
    expect(await openWebhookSecret(env, (await webhookRow(w.id))!)).toBe(w.secret);
  });

  it("the admin re-seal route needs the admin token", async () => {
    expect((await admin("/secrets/reseal", { method: "POST", headers: { Authorization: "Bearer nope" } })).status).toBe(
      401,
    );
  });
});
