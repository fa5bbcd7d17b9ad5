import { describe, expect, it } from "vitest";
import type { OutboundText } from "../../../src/operator/adapter";
import { SANDBOX_MAGIC_NUMBERS, SANDBOX_REPORT_DELAY_MS, SandboxAdapter } from "../../../src/operator/sandbox";

const OPEN = "5511999990001";
const CLOSED = "5511999990002";
const sandbox = new SandboxAdapter({ mayReceiveFreeForm: async (to) => to === OPEN });
const send = (to: string, over: Partial<OutboundText> = {}) =>
  sandbox.send({ jobId: "j1", to, attempt: 1, type: "text", payload: { body: "hi" }, ...over });
const template = (name: string, code = "en_US") => ({
  type: "template",
  payload: { name, language: { code }, components: [] },
});

describe("the sandbox operator", () => {
  it("accepts a send to an open window, then reports it delivered and read, as the operator would", async () => {
    expect(await send(OPEN)).toEqual({
      kind: "accepted",
      upstreamMessageId: "sandbox.j1",
      later: [
        { afterMs: SANDBOX_REPORT_DELAY_MS.delivered, status: "delivered" },
        { afterMs: SANDBOX_REPORT_DELAY_MS.read, status: "read" },
      ],
    });
  });

  it("accepts a text to a closed window and fails it afterwards with 131047; a template ignores the window", async () => {
    const closed = await send(CLOSED);
    expect(closed).toMatchObject({ kind: "accepted", later: [{ status: "failed", errorCode: "131047" }] });
    expect(await send(CLOSED, template("order_update"))).toMatchObject({
      kind: "accepted",
      later: [{ status: "delivered" }, { status: "read" }],
    });
  });

  it("checks a template as the operator does: unknown name or language, paused", async () => {
    expect(await send(OPEN, template("no_such"))).toMatchObject({ kind: "permanent" });
    expect(await send(OPEN, template("order_update", "fr_FR"))).toMatchObject({ kind: "permanent" });
    const paused = await send(OPEN, template("spring_sale"));
    expect(paused.kind).not.toBe("accepted");
    expect(JSON.stringify(paused)).toContain("132015");
  });

  it("treats every other kind as free-form text: delivered and read in the window, 131047 outside it", async () => {
    const image = { type: "image", payload: { link: "https://cdn.example.com/a.png", caption: "Hi" } };
    expect(await send(OPEN, image)).toMatchObject({
      kind: "accepted",
      later: [{ status: "delivered" }, { status: "read" }],
    });
    expect(await send(CLOSED, image)).toMatchObject({
      kind: "accepted",
      later: [{ status: "failed", errorCode: "131047" }],
    });
  });

  it("refuses a type the operator does not know, as the operator does (131051)", async () => {
    const refused = await send(OPEN, { type: "carousel", payload: {} });
    expect(refused).toMatchObject({ kind: "permanent", error: { code: "unsupported_message_type" } });
  });

  it("reports a reaction sent and nothing after, as the operator does", async () => {
    const reaction = { type: "reaction", payload: { message_id: "wamid.x", emoji: "👍" } };
    expect(await send(OPEN, reaction)).toEqual({ kind: "accepted", upstreamMessageId: "sandbox.j1" });
  });

  it("gives each magic number its documented behaviour, whatever the window", async () => {
    const m = SANDBOX_MAGIC_NUMBERS;
    expect(await send(m.windowClosed)).toMatchObject({ kind: "accepted", later: [{ errorCode: "131047" }] });
    expect(await send(m.unreachable)).toMatchObject({ kind: "accepted", later: [{ errorCode: "131026" }] });
    expect((await send(m.retryThenSent)).kind).toBe("retryable");
    expect((await send(m.retryThenSent, { attempt: 2 })).kind).toBe("accepted");
    expect((await send(m.throttledThenSent, { attempt: 2 })).kind).toBe("retryable");
    expect((await send(m.throttledThenSent, { attempt: 3 })).kind).toBe("accepted");
    expect((await send(m.alwaysDown, { attempt: 9 })).kind).toBe("retryable");
    expect(await send(m.timeout)).toMatchObject({ kind: "unknown", later: [{ status: "sent" }] });
  });
});
