import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createTenant } from "../helpers/fixtures";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { signedInMember } from "../helpers/dashboard";
import { send, textMessage } from "../helpers/send";

const net = mockNetworkPerTest();

describe("dashboard wording a newcomer reads in the first hour", () => {
  it("the Numbers page shows channelNumberId as code, not as literal backticks", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const page = await (await owner.browser.get("/dashboard/numbers")).text();
    expect(page).toContain("<code>channelNumberId</code>");
    expect(page).not.toContain("`");
  });

  it("the overview counts webhook endpoints in words, one or many, never 'endpoint(s)'", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const host = `hooks-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
    net.dns.set(host, ["93.184.216.34"]);
    net.receivers.set(`https://${host}/in`, answers(204));
    expect((await owner.browser.post(`/dashboard/webhooks/${t.numberId}`, { url: `https://${host}/in` })).status).toBe(
      303,
    );
    const page = await (await owner.browser.get("/dashboard")).text();
    expect(page).toContain("The webhook endpoint is delivering.");
    expect(page).not.toContain("(s)");
  });

  it("a refused member change is shown as an error (role=alert), not as a confirmation, and changes nothing", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    expect((await owner.browser.post(`/dashboard/members/${owner.memberId}/role`, { role: "developer" })).status).toBe(
      303,
    );
    const page = await (await owner.browser.get("/dashboard/members")).text();
    expect(page).toMatch(
      /<section class="flash flash-error" role="alert"[^>]*><p>A workspace needs at least one owner/,
    );
    expect(await env.DB.prepare("SELECT role FROM members WHERE id = ?").bind(owner.memberId).first("role")).toBe(
      "owner",
    );
    // A success stays a plain notice.
    expect(page).not.toContain('aria-label="Notice"');
  });

  it("the webhook form states what this deployment accepts (tests run as production: public HTTPS only)", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const page = await (await owner.browser.get(`/dashboard/webhooks/${t.numberId}`)).text();
    expect(page).toMatch(/Public HTTPS only\s*; the address is checked/);
    expect(page).not.toContain("127.0.0.1");
  });

  it("the overview of a workspace that has sent nothing shows how to send the first message, with its number; gone after a send", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const before = await (await owner.browser.get("/dashboard")).text();
    expect(before).toContain('<h2 id="start-heading">Send your first message</h2>');
    expect(before).toContain("curl -s -X POST https://gateway.test/api/v1/messages");
    expect(before).toContain(`&quot;channelNumberId&quot;:&quot;${t.numberId}&quot;`);
    expect(before).toMatch(/Idempotency-Key: [0-9a-f-]{36}/);
    expect(before).not.toMatch(/msg_live_/);
    const sent = await send(t.key, crypto.randomUUID(), textMessage(t.numberId));
    expect(sent.status).toBe(201);
    expect(await (await owner.browser.get("/dashboard")).text()).not.toContain("Send your first message");
  });
});
