import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, expectError, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace, TEST_CONTACT } from "../helpers/fixtures";
import {
  accepted,
  liveConnectBody,
  fakeOperatorAccount,
  operatorCallOf,
  operatorError,
  type OperatorCall,
} from "../helpers/operator";
import { send, textMessage } from "../helpers/send";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { apiV2, fakeTemplates, positionalTemplate, sendV2 } from "../helpers/operator-templates";
import { answerAtEdge } from "../helpers/edge";
import { fileBytes } from "../helpers/operator-media";
import { holdObject, testNumber } from "../helpers/objects";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import {
  PACE_SPACING_MS,
  PACE_WINDOW_MS,
  RETRY_POLICY,
} from "../../src/durable-objects/channel-number/delivery-policy";

// Our media store's files reach the operator by its media upload endpoint: a template's media
// header named by our id is uploaded once per file and number (multipart, streamed from R2), and
// the message carries the operator's id. A retried send, and a second send of the same file,
// upload nothing again. Files that cannot be sent are refused before anything is queued, or fail
// the message with nothing sent. The operator is faked at the network edge.

const clock = fakeClockPerTest(Date.UTC(2045, 0, 1), (t) => t + 40 * 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

const NOBODY = "5511944443333";
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
const JPEG = (() => {
  const bytes = new Uint8Array(3000);
  bytes.set([0xff, 0xd8, 0xff, 0xe0]);
  for (let i = 4; i < bytes.length; i++) bytes[i] = (i * 13) & 0xff;
  return bytes;
})();
const PDF = new TextEncoder().encode("%PDF-1.7\n% a document\n");

const TEMPLATES = [
  positionalTemplate("order_update", {
    components: [
      { type: "HEADER", format: "IMAGE", example: { header_handle: ["https://example.com/h.png"] } },
      { type: "BODY", text: "Hi {{1}}, your order {{2}} has shipped." },
    ],
  }),
];

/** A workspace with a live number whose account lists `order_update` (an image header). */
async function liveTenant() {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const account = fakeOperatorAccount();
  const listed = fakeTemplates(account, TEMPLATES);
  const res = await api("/channel-numbers", key, { method: "POST", json: { upstream: liveConnectBody(account) } });
  expect(res.status, await res.clone().text()).toBe(201);
  listed.restore();
  account.restore();
  return { workspaceId, key, account, numberId: (await json<{ id: string }>(res)).id };
}

async function uploadFile(key: string, bytes: Uint8Array, type: string): Promise<string> {
  const res = await apiV2("/media", key, {
    method: "POST",
    headers: { "Content-Type": type, "Content-Length": String(bytes.byteLength) },
    body: bytes,
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ id: string }>(res)).id;
}

const orderUpdate = (channelNumberId: string, header: unknown) => ({
  channelNumberId,
  to: NOBODY,
  type: "template",
  template: { name: "order_update", language: "en_US", parameters: { header, body: ["Ana", "#1042"] } },
});

interface Upload {
  auth: string | null;
  /** Whether the request's body was a stream (not a buffer made first). */
  streamed: boolean;
  fields: Record<string, string>;
  file: Uint8Array;
  fileType: string;
  /** The request's Content-Type and body as they came, byte for byte. */
  contentType: string | null;
  raw: Uint8Array;
}

/**
 * The operator's Cloud API at the edge: media uploads (recorded, answered `uploadReply`) and message
 * calls (recorded, answered `messageReply`). Anything else fails the test.
 */
function fakeOperator(
  messageReply: (call: OperatorCall, index: number) => Response,
  uploadReply: (index: number) => Response | Promise<Response> = (i) => Response.json({ id: `90000000000${i}` }),
) {
  const uploads: Upload[] = [];
  const messages: OperatorCall[] = [];
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    if (req.method === "POST" && req.url.endsWith("/media")) {
      const streamed = init?.body instanceof ReadableStream;
      const raw = new Uint8Array(await req.clone().arrayBuffer());
      const form = await req.formData();
      const file = form.get("file") as unknown as File;
      uploads.push({
        auth: req.headers.get("authorization"),
        streamed,
        fields: { messaging_product: String(form.get("messaging_product")), type: String(form.get("type")) },
        file: new Uint8Array(await file.arrayBuffer()),
        fileType: file.type,
        contentType: req.headers.get("content-type"),
        raw,
      });
      return await uploadReply(uploads.length - 1);
    }
    if (req.method === "POST" && req.url.endsWith("/messages")) {
      const call = await operatorCallOf(req);
      messages.push(call);
      return messageReply(call, messages.length - 1);
    }
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
  return { uploads, messages };
}

const headerOf = (call: OperatorCall) => call.body.template?.components.find((c) => c.type === "header");

/**
 * `order_update` with `mediaId` in its header, sent and its call started: a fake operator holds the
 * file's upload open until `release()`, then answers `operatorMediaId`. The answer is made in the
 * caller's context (the object's), which polls for the release: a promise settled here could not be
 * read there.
 */
async function templateWithHeldUpload(
  t: Awaited<ReturnType<typeof liveTenant>>,
  mediaId: string,
  operatorMediaId: string,
) {
  const state = { started: false, released: false };
  const operator = fakeOperator(
    (call) => accepted(`wamid.${call.body.biz_opaque_callback_data}`),
    async () => {
      state.started = true;
      while (!state.released) await new Promise((resolve) => setTimeout(resolve, 5));
      return Response.json({ id: operatorMediaId });
    },
  );
  const runs: Promise<unknown>[] = [];
  expect((await sendV2(t.key, orderUpdate(t.numberId, { mediaId }))).status).toBe(201);
  runs.push(drain(t.numberId));
  await vi.waitFor(() => expect(state.started).toBe(true), { timeout: 5_000, interval: 20 });
  return { operator, runs, release: () => (state.released = true) };
}

describe("a template's media header by our media id", () => {
  it("is uploaded to the operator once, streamed, and a retried send reuses the operator's id", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const operator = fakeOperator((call, i) =>
      i === 0
        ? operatorError(503, 131016, "Service unavailable")
        : accepted(`wamid.${call.body.biz_opaque_callback_data}`),
    );
    const res = await sendV2(t.key, orderUpdate(t.numberId, { mediaId }));
    expect(res.status, await res.clone().text()).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);

    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(1);
    const [upload] = operator.uploads;
    expect(upload!.auth).toBe(`Bearer ${t.account.token}`);
    expect(upload!.fields).toEqual({ messaging_product: "whatsapp", type: "image/jpeg" });
    expect(upload!.fileType).toBe("image/jpeg");
    expect(upload!.file).toEqual(JPEG);
    // Streamed from R2 as the request goes out, never read into one buffer first.
    expect(upload!.streamed).toBe(true);
    expect(operator.messages).toHaveLength(1);
    expect(headerOf(operator.messages[0]!)).toEqual({
      type: "header",
      parameters: [{ type: "image", image: { id: "900000000000" } }],
    });

    // The operator said "not processed": the message is tried again, with the same file's id.
    clock.advance(RETRY_POLICY.delaysMs[0]! + 1_000);
    await drain(t.numberId);
    expect(operator.messages).toHaveLength(2);
    expect(headerOf(operator.messages[1]!)).toEqual(headerOf(operator.messages[0]!));
    expect(operator.uploads).toHaveLength(1);
    await vi.waitFor(
      async () => expect(await json(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({ status: "sent" }),
      { timeout: 10_000, interval: 50 },
    );

    // The same file in another message: the operator still holds it.
    const again = await sendV2(t.key, orderUpdate(t.numberId, { mediaId }));
    expect(again.status).toBe(201);
    clock.advance(2_000);
    await drain(t.numberId);
    expect(operator.messages).toHaveLength(3);
    expect(headerOf(operator.messages[2]!)).toEqual(headerOf(operator.messages[0]!));
    expect(operator.uploads).toHaveLength(1);
  });

  it("is one multipart body, byte for byte, whose file part R2's pipe fills with no chunk read in JavaScript", async () => {
    const t = await liveTenant();
    // 1 MB whose bytes differ at every offset: a piece dropped, repeated or moved changes the body.
    const jpeg = fileBytes(1024 * 1024, 7);
    jpeg.set([0xff, 0xd8, 0xff, 0xe0]);
    const mediaId = await uploadFile(t.key, jpeg, "image/jpeg");
    const operator = fakeOperator((call) => accepted(`wamid.${call.body.biz_opaque_callback_data}`));
    expect((await sendV2(t.key, orderUpdate(t.numberId, { mediaId }))).status).toBe(201);
    // A chunk read in JavaScript stays in memory until the garbage collector frees it: a loop over
    // the file grows the Worker's memory with its size; the runtime's pipe never calls this.
    const reads = vi.spyOn(ReadableStreamDefaultReader.prototype, "read");
    await drain(t.numberId);
    expect(reads.mock.calls.length).toBe(0);
    reads.mockRestore();

    expect(operator.uploads).toHaveLength(1);
    const [upload] = operator.uploads;
    const boundary = /^multipart\/form-data; boundary=(-{4}media-[0-9a-f-]{36})$/.exec(upload!.contentType ?? "")?.[1];
    expect(boundary, upload!.contentType ?? "").toBeDefined();
    const text = new TextEncoder();
    const expected = [
      text.encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="messaging_product"\r\n\r\nwhatsapp\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\nimage/jpeg\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="image-${mediaId}"\r\n` +
          "Content-Type: image/jpeg\r\n\r\n",
      ),
      jpeg,
      text.encode(`\r\n--${boundary}--\r\n`),
    ];
    const body = new Uint8Array(expected.reduce((n, part) => n + part.byteLength, 0));
    expected.reduce((at, part) => (body.set(part, at), at + part.byteLength), 0);
    expect(upload!.raw.byteLength).toBe(body.byteLength);
    // The first byte where they differ, if any.
    expect(body.findIndex((b, i) => upload!.raw[i] !== b)).toBe(-1);
    expect(headerOf(operator.messages[0]!)).toEqual({
      type: "header",
      parameters: [{ type: "image", image: { id: "900000000000" } }],
    });
  });

  it("an upload still under way holds no other recipient's message of the number", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const seen: string[] = [];
    let textArrived: () => void = () => undefined;
    const textCalled = new Promise<void>((resolve) => (textArrived = resolve));
    const operator = fakeOperator(
      (call) => {
        seen.push(`${call.body.type} call`);
        if (call.body.type === "text") textArrived();
        return accepted(`wamid.${call.body.biz_opaque_callback_data}`);
      },
      async () => {
        seen.push("upload started");
        // The operator answers the upload only once the other recipient's message reached it (or,
        // if that message waited behind the upload, after 5 s: then the order below fails).
        await Promise.race([textCalled, new Promise((resolve) => setTimeout(resolve, 5_000))]);
        seen.push("upload answered");
        return Response.json({ id: "900000000077" });
      },
    );
    expect((await sendV2(t.key, orderUpdate(t.numberId, { mediaId }))).status).toBe(201);
    const first = drain(t.numberId);
    await vi.waitFor(() => expect(seen).toContain("upload started"), { timeout: 5_000, interval: 20 });
    clock.advance(1_000);
    const other = await send(
      t.key,
      crypto.randomUUID(),
      textMessage(t.numberId, "Your table is ready", "5511933332222"),
    );
    expect(other.status).toBe(201);
    const second = drain(t.numberId);
    // The template's call takes the pace's next slot after the text's: the clock goes on until then.
    await vi.waitFor(
      () => {
        clock.advance(25);
        expect(seen).toContain("template call");
      },
      { timeout: 10_000, interval: 20 },
    );
    await Promise.all([first, second]);
    expect(seen).toEqual(["upload started", "text call", "upload answered", "template call"]);
    expect(operator.uploads).toHaveLength(1);
  });

  it("the message's call after its upload takes a pace slot of its own: no three calls of the number in one window", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const { operator, runs, release } = await templateWithHeldUpload(t, mediaId, "900000000088");

    // Two other recipients' texts take the next slots of the pace while the upload runs.
    for (const [i, to] of ["5511933332222", "5511933334444"].entries()) {
      clock.advance(PACE_SPACING_MS);
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, `Text ${i}`, to));
      expect(res.status).toBe(201);
      runs.push(drain(t.numberId));
      await vi.waitFor(() => expect(operator.messages).toHaveLength(i + 1), { timeout: 5_000, interval: 20 });
    }
    // Neither waited behind the upload.
    expect(operator.messages.map((m) => m.body.type)).toEqual(["text", "text"]);

    // The upload ends; the clock goes on (faster than real time) until the message's call is made.
    release();
    await vi.waitFor(
      () => {
        clock.advance(25);
        expect(operator.messages).toHaveLength(3);
      },
      { timeout: 10_000, interval: 20 },
    );
    await Promise.all(runs);
    expect(operator.uploads).toHaveLength(1);
    expect(operator.messages[2]!.body.type).toBe("template");
    expect(headerOf(operator.messages[2]!)).toEqual({
      type: "header",
      parameters: [{ type: "image", image: { id: "900000000088" } }],
    });
    // As the operator saw them: any three message calls of the number span a whole window.
    const at = operator.messages.map((m) => m.at);
    expect(at[2]! - at[0]!).toBeGreaterThanOrEqual(PACE_WINDOW_MS);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(PACE_SPACING_MS);
  });

  it("a message call after its upload that takes the slot while another call's claim is on its way: that call waits for the next slot", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const { operator, runs, release } = await templateWithHeldUpload(t, mediaId, "900000000089");

    // Another recipient's text is due at the next slot; its claim waits at the busy workspace.
    clock.advance(PACE_SPACING_MS);
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Your table is ready", "5511933332222"));
    const { jobId } = await json<{ jobId: string }>(res);
    // Past the short wait of a claim that may have found the send still committing.
    clock.advance(200);
    const gate = await holdObject(workspaceStub(env, t.workspaceId));
    runs.push(drain(t.numberId));
    await vi.waitFor(
      async () => expect((await testNumber(t.numberId).queued()).find((e) => e.jobId === jobId)?.state).toBe("calling"),
      { timeout: 5_000, interval: 10 },
    );
    // Meanwhile the upload ends and the template's call takes that slot.
    release();
    await vi.waitFor(() => expect(operator.messages).toHaveLength(1), { timeout: 5_000, interval: 10 });
    await gate.release();
    await vi.waitFor(
      () => {
        clock.advance(25);
        expect(operator.messages).toHaveLength(2);
      },
      { timeout: 10_000, interval: 20 },
    );
    await Promise.all(runs);
    expect(operator.messages.map((m) => m.body.type)).toEqual(["template", "text"]);
    expect(operator.messages[1]!.at - operator.messages[0]!.at).toBeGreaterThanOrEqual(PACE_SPACING_MS);
  });

  it("a failed upload sends no message and is tried again with the send", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const operator = fakeOperator(
      (call) => accepted(`wamid.${call.body.biz_opaque_callback_data}`),
      (i) => (i === 0 ? operatorError(500, 131016, "Service unavailable") : Response.json({ id: "900000000042" })),
    );
    expect((await sendV2(t.key, orderUpdate(t.numberId, { mediaId }))).status).toBe(201);
    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(1);
    expect(operator.messages).toHaveLength(0);
    clock.advance(RETRY_POLICY.delaysMs[0]! + 1_000);
    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(2);
    expect(operator.messages).toHaveLength(1);
    expect(headerOf(operator.messages[0]!)).toEqual({
      type: "header",
      parameters: [{ type: "image", image: { id: "900000000042" } }],
    });
  });

  it("a file deleted after the send was accepted fails the message with media_unavailable, nothing sent", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const operator = fakeOperator((call) => accepted(`wamid.${call.body.biz_opaque_callback_data}`));
    const res = await sendV2(t.key, orderUpdate(t.numberId, { mediaId }));
    const { jobId } = await json<{ jobId: string }>(res);
    expect((await apiV2(`/media/${mediaId}`, t.key, { method: "DELETE" })).status).toBe(204);
    await drain(t.numberId);
    await vi.waitFor(
      async () =>
        expect(await json(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
          status: "failed",
          error: { code: "media_unavailable", retriable: false },
        }),
      { timeout: 10_000, interval: 50 },
    );
    expect(operator.uploads).toHaveLength(0);
    expect(operator.messages).toHaveLength(0);
  });

  it.each([
    ["an unknown id", async () => crypto.randomUUID(), "unknown_media"],
    [
      "another workspace's file",
      async () => uploadFile((await createTenant()).key, JPEG, "image/jpeg"),
      "unknown_media",
    ],
    ["a document for an image header", async (key: string) => uploadFile(key, PDF, "application/pdf"), "media_kind"],
  ])("refuses %s before anything is queued, naming the rule", async (_, mediaIdOf, rule) => {
    const t = await liveTenant();
    const mediaId = await mediaIdOf(t.key);
    const operator = fakeOperator(() => accepted("wamid.never"));
    const res = await sendV2(t.key, orderUpdate(t.numberId, { mediaId }));
    const body = await expectError(res, 400, "template_parameters_invalid");
    expect(body.error.details).toEqual([
      { path: "template.parameters.header.mediaId", rule, message: expect.any(String) },
    ]);
    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(0);
    expect(operator.messages).toHaveLength(0);
  });

  it("refuses an expired file before anything is queued, leaving its Idempotency-Key free", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    clock.advance(30 * 24 * 3_600_000);
    const key = crypto.randomUUID();
    const res = await sendV2(t.key, orderUpdate(t.numberId, { mediaId }), key);
    const body = await expectError(res, 400, "template_parameters_invalid");
    expect(body.error.details?.[0]?.rule).toBe("unknown_media");
    // Nothing was recorded: the Idempotency-Key is still free for the corrected send.
    const fresh = await uploadFile(t.key, JPEG, "image/jpeg");
    expect((await sendV2(t.key, orderUpdate(t.numberId, { mediaId: fresh }), key)).status).toBe(201);
  });
});

/** `USER` writes to the number: its 24-hour window opens, as a media message needs. */
const USER = "5511912345678";
async function userWrites(t: Awaited<ReturnType<typeof liveTenant>>): Promise<void> {
  const wamid = `wamid.IN${crypto.randomUUID().slice(0, 8)}`;
  const payload = inboundPayload(
    t.account.phoneNumberId,
    [{ from: USER, id: wamid, timestamp: seconds(clock.now()), type: "text", text: { body: "Hi" } }],
    [{ wa_id: USER, profile: { name: "Ana" } }],
  );
  expect((await postOperator(payload)).status).toBe(200);
  await vi.waitFor(
    async () => {
      const list = await json<{ data: { upstreamMessageId: string | null }[] }>(
        await apiV2("/messages?direction=inbound", t.key),
      );
      expect(list.data.some((m) => m.upstreamMessageId === wamid)).toBe(true);
    },
    { timeout: 10_000, interval: 50 },
  );
}

describe("a media message by our media id", () => {
  it("uploads the file once, sends the operator's id with the stored file name, and reads back as sent", async () => {
    const t = await liveTenant();
    await userWrites(t);
    const upload = await apiV2("/media?filename=invoice-1042.pdf", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/pdf", "Content-Length": String(PDF.byteLength) },
      body: PDF,
    });
    const mediaId = (await json<{ id: string }>(upload)).id;
    const operator = fakeOperator((call, i) =>
      i === 0
        ? operatorError(503, 131016, "Service unavailable")
        : accepted(`wamid.${call.body.biz_opaque_callback_data}`),
    );
    const document = { mediaId, caption: "Your invoice" };
    const res = await sendV2(t.key, { channelNumberId: t.numberId, to: USER, type: "document", document });
    expect(res.status, await res.clone().text()).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    await drain(t.numberId);
    clock.advance(RETRY_POLICY.delaysMs[0]! + 1_000);
    await drain(t.numberId);

    expect(operator.uploads).toHaveLength(1);
    expect(operator.uploads[0]!.file).toEqual(PDF);
    expect(operator.uploads[0]!.fields.type).toBe("application/pdf");
    expect(operator.messages).toHaveLength(2);
    for (const call of operator.messages)
      expect(call.body).toEqual({
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to: `+${USER}`,
        type: "document",
        document: { id: "900000000000", caption: "Your invoice", filename: "invoice-1042.pdf" },
        biz_opaque_callback_data: jobId,
      });
    await vi.waitFor(
      async () =>
        expect(await json(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
          status: "sent",
          type: "document",
          text: { body: "[document] invoice-1042.pdf Your invoice" },
          document: { mediaId, caption: "Your invoice", filename: "invoice-1042.pdf" },
        }),
      { timeout: 10_000, interval: 50 },
    );
  });

  it.each<[string, (pdf: string) => Record<string, unknown>, string, string]>([
    ["an unknown id", () => ({ mediaId: crypto.randomUUID() }), "image.mediaId", "unknown_media"],
    ["a PDF sent as an image", (pdf) => ({ mediaId: pdf }), "image.mediaId", "media_kind"],
    [
      "a link and a mediaId at once",
      (pdf) => ({ mediaId: pdf, link: "https://cdn.example.com/a.png" }),
      "image.mediaId",
      "one_of",
    ],
    ["neither a link nor a mediaId", () => ({ caption: "?" }), "image.link", "required"],
  ])("refuses %s with a 400 naming its rule, nothing queued", async (_, imageOf, path, rule) => {
    const t = await liveTenant();
    await userWrites(t);
    const image = { image: imageOf(await uploadFile(t.key, PDF, "application/pdf")) };
    const operator = fakeOperator(() => accepted("wamid.never"));
    const key = crypto.randomUUID();
    const res = await sendV2(t.key, { channelNumberId: t.numberId, to: USER, type: "image", ...image }, key);
    const body = await expectError(res, 400, "invalid_request");
    expect(body.error.details).toEqual([expect.objectContaining({ path, rule })]);
    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(0);
    expect(operator.messages).toHaveLength(0);
    // Nothing was recorded: the key is free for a correct send.
    const jpeg = await uploadFile(t.key, JPEG, "image/jpeg");
    const ok = await sendV2(
      t.key,
      { channelNumberId: t.numberId, to: USER, type: "image", image: { mediaId: jpeg } },
      key,
    );
    expect(ok.status).toBe(201);
  });

  it("refuses an image file past its expiry with unknown_media, nothing queued", async () => {
    const t = await liveTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    clock.advance(30 * 24 * 3_600_000);
    await userWrites(t);
    const operator = fakeOperator(() => accepted("wamid.never"));
    const res = await sendV2(t.key, { channelNumberId: t.numberId, to: USER, type: "image", image: { mediaId } });
    const body = await expectError(res, 400, "invalid_request");
    expect(body.error.details).toEqual([expect.objectContaining({ path: "image.mediaId", rule: "unknown_media" })]);
    await drain(t.numberId);
    expect(operator.uploads).toHaveLength(0);
    expect(operator.messages).toHaveLength(0);
  });
});

describe("a sandbox number", () => {
  it("sends a stored file it still has, and fails one deleted before it left with media_unavailable", async () => {
    const t = await createTenant();
    const mediaId = await uploadFile(t.key, JPEG, "image/jpeg");
    const image = (caption: string) => ({
      channelNumberId: t.numberId,
      to: TEST_CONTACT,
      type: "image",
      image: { mediaId, caption },
    });
    const kept = await json<{ jobId: string }>(await sendV2(t.key, image("kept")));
    await drain(t.numberId);
    const deletedFirst = await json<{ jobId: string }>(await sendV2(t.key, image("deleted first")));
    expect((await apiV2(`/media/${mediaId}`, t.key, { method: "DELETE" })).status).toBe(204);
    clock.advance(2_000);
    await drain(t.numberId);
    await vi.waitFor(
      async () => {
        // The sandbox reports it delivered (then read) soon after it left: any of them says it was sent.
        expect(await json(await apiV2(`/messages/${kept.jobId}`, t.key))).toMatchObject({
          status: expect.stringMatching(/^(sent|delivered|read)$/),
        });
        expect(await json(await apiV2(`/messages/${deletedFirst.jobId}`, t.key))).toMatchObject({
          status: "failed",
          error: { code: "media_unavailable", retriable: false },
        });
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
