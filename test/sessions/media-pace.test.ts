import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, fakeOperatorAccount, liveConnectBody, operatorCallOf, type OperatorCall } from "../helpers/operator";
import { apiV2, fakeTemplates, positionalTemplate, sendV2 } from "../helpers/operator-templates";
import { api, json } from "../helpers/http";
import { answerAtEdge } from "../helpers/edge";
import { fakeClock } from "../helpers/clock";
import { PACE_CALLS, PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";

// A drain session as in production (DRAIN_SESSION_MS 10 s), in real time: a send whose file goes to
// the operator first makes its message call while the session goes on calling other recipients.

afterEach(() => {
  vi.restoreAllMocks();
});

const TEMPLATES = [
  positionalTemplate("order_update", {
    components: [
      { type: "HEADER", format: "IMAGE", example: { header_handle: ["https://example.com/h.png"] } },
      { type: "BODY", text: "Hi {{1}}, your order {{2}} has shipped." },
    ],
  }),
];

describe("a media send's message call in a running session", () => {
  it("takes a slot of its own among the other recipients' calls: no window holds three message calls", async () => {
    expect(env.DRAIN_SESSION_MS).toBe("10000");
    const clock = fakeClock(Date.now(), { advancing: true });
    clock.set(Date.UTC(2044, 6, 1) + Math.floor(Math.random() * 1e9));
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const account = fakeOperatorAccount();
    const listed = fakeTemplates(account, TEMPLATES);
    const connected = await api("/channel-numbers", key, {
      method: "POST",
      json: { upstream: liveConnectBody(account) },
    });
    expect(connected.status, await connected.clone().text()).toBe(201);
    listed.restore();
    account.restore();
    const numberId = (await json<{ id: string }>(connected)).id;
    const jpeg = new Uint8Array(2048).fill(7);
    jpeg.set([0xff, 0xd8, 0xff, 0xe0]);
    const stored = await apiV2("/media", key, {
      method: "POST",
      headers: { "Content-Type": "image/jpeg", "Content-Length": String(jpeg.byteLength) },
      body: jpeg,
    });
    expect(stored.status, await stored.clone().text()).toBe(201);
    const mediaId = (await json<{ id: string }>(stored)).id;

    // The operator answers the upload once the test released it (polled in the object's context,
    // where the answer is made), and every message call at once, recording when it came.
    let released = false;
    const messages: OperatorCall[] = [];
    answerAtEdge(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.endsWith("/media")) {
        await req.arrayBuffer();
        while (!released) await new Promise((resolve) => setTimeout(resolve, 5));
        return Response.json({ id: "900000000099" });
      }
      if (req.url.endsWith("/messages")) {
        const call = await operatorCallOf(req);
        messages.push(call);
        return accepted(`wamid.${call.body.biz_opaque_callback_data}`);
      }
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    });

    const template = {
      channelNumberId: numberId,
      to: "5511944443333",
      type: "template",
      template: {
        name: "order_update",
        language: "en_US",
        parameters: { header: { mediaId }, body: ["Ana", "#1042"] },
      },
    };
    let sentAt = Date.now();
    expect((await sendV2(key, template)).status).toBe(201);
    // Each text to its own recipient, 600 ms apart (the number's 2 sends a second at admission);
    // the upload ends after two of them were called, with the session still calling the others.
    const texts = 6;
    for (let i = 0; i < texts; i++) {
      // Never back: a send slower than 600 ms in real time leaves a longer gap instead.
      sentAt = Math.max(Date.now(), sentAt + 600);
      clock.set(sentAt);
      const res = await send(key, crypto.randomUUID(), textMessage(numberId, `t${i}`, `55119333300${i}${i}`));
      expect(res.status, await res.clone().text()).toBe(201);
      if (i === 1) {
        await vi.waitFor(() => expect(messages).toHaveLength(2), { timeout: 10_000, interval: 10 });
        released = true;
      }
    }
    await vi.waitFor(() => expect(messages).toHaveLength(texts + 1), { timeout: 15_000, interval: 20 });

    expect(messages.filter((m) => m.body.type === "template")).toHaveLength(1);
    const at = messages.map((m) => m.at).sort((a, b) => a - b);
    // Each call and the one PACE_CALLS later: never inside one window.
    const closest = Math.min(...at.slice(PACE_CALLS).map((t, i) => t - at[i]!));
    expect(closest).toBeGreaterThanOrEqual(PACE_WINDOW_MS);
  });
});
