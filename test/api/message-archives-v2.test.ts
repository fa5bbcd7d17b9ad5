import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { answerAtEdge } from "../helpers/edge";
import { api, json } from "../helpers/http";
import { accepted, liveNumberTenant, operatorCallOf, type OperatorCall } from "../helpers/operator";
import { inboundPayload, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { send, textMessage } from "../helpers/send";
import { ndjsonText } from "../helpers/ndjson";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { manifestKey, partKey, type ArchiveManifest } from "../../src/durable-objects/history/archive-keys";
import { toMessageView, type MessageRow } from "../../src/messages/record";
import { withStatusV2 } from "../../src/messages/message-v2";
import { DAY_MS } from "../../src/lib/job-id";
import { openArchive } from "../../src/engine/archives";

// An archived day in each version's view (GET /api/v{1,2}/message-archives/{day}), through the
// Worker's fetch handler, a live number and the operator faked at the network edge: each message's
// v2 line is what GET /api/v2/messages/{id} answered before the day left the history window, byte for
// byte (a rich send's type and fields, an inbound answer and its read mark included), and each v1
// line is what GET /api/v1/messages/{id} answered, as v1's archive always was. A day archived before
// v2's values were kept downloads as it did: v1's lines as written, v2's derived from them.

const clock = fakeClockPerTest(Date.UTC(2045, 3, 1, 8), (t) => t + 90 * DAY_MS);
afterEach(() => {
  vi.restoreAllMocks();
});

const USER = "5511912345678";
const until = (check: () => void | Promise<void>) => vi.waitFor(check, { timeout: 10_000, interval: 50 });
const JPEG = (() => {
  const bytes = new Uint8Array(2000);
  bytes.set([0xff, 0xd8, 0xff, 0xe0]);
  for (let i = 4; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
  return bytes;
})();

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/**
 * The operator's Cloud API at the edge: media uploads answered with its id, read marks with
 * success, sends accepted as `wamid.<jobId>`. Anything else fails the test.
 */
function fakeOperator(): { sends: OperatorCall[]; uploads: number; marks: number } {
  const seen = { sends: [] as OperatorCall[], uploads: 0, marks: 0 };
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`) || req.method !== "POST")
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    if (req.url.endsWith("/media")) {
      seen.uploads += 1;
      await req.arrayBuffer();
      return Response.json({ id: `90000000000${seen.uploads}` });
    }
    const call = await operatorCallOf(req);
    if ((call.body as { status?: string }).status === "read") {
      seen.marks += 1;
      return Response.json({ success: true });
    }
    seen.sends.push(call);
    return accepted(`wamid.${call.body.biz_opaque_callback_data}`);
  });
  return seen;
}

/** `USER` writes to the number (`message`: the operator's fields of it); the id we gave it. */
async function userWrites(t: Tenant, wamid: string, message: Record<string, unknown>): Promise<string> {
  const payload = inboundPayload(t.phoneNumberId, [
    { from: USER, id: wamid, timestamp: seconds(clock.now()), ...message },
  ]);
  expect((await postOperator(payload)).status).toBe(200);
  let id = "";
  await until(async () => {
    const list = await json<{ data: { id: string; upstreamMessageId: string | null }[] }>(
      await apiV2("/messages?direction=inbound", t.key),
    );
    id = list.data.find((m) => m.upstreamMessageId === wamid)?.id ?? "";
    expect(id).not.toBe("");
  });
  return id;
}

async function created(res: Response): Promise<string> {
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

/** The raw body of a response (the API's JSON bytes, as a string). */
const bodyOf = async (res: Response): Promise<string> => {
  expect(res.status).toBe(200);
  return res.text();
};

/** The lines of an archived day through one version's route, as sent (not parsed). */
async function archiveText(t: Tenant, day: string, version: "v1" | "v2"): Promise<string> {
  const res = await (version === "v1" ? api : apiV2)(`/message-archives/${day}`, t.key);
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toBe("application/x-ndjson; charset=utf-8");
  return ndjsonText(res);
}

const linesById = (text: string): Map<string, string> => {
  expect(text.endsWith("\n")).toBe(true);
  return new Map(
    text
      .slice(0, -1)
      .split("\n")
      .map((line) => [(JSON.parse(line) as { id: string }).id, line]),
  );
};

/**
 * A day of a live number with a message of every kind: a user's text, a text sent through v1, and
 * through v2 an image by link (then read by the user), an image by our media id, an interactive
 * message, a location, contacts and a reaction to the user's text; the user's answer to the
 * interactive message, marked read with the typing indicator. Returns each message's id, its views
 * through both versions and its stored record, all taken while the day is in the history window.
 */
async function dayOfEveryKind(t: Tenant) {
  const operator = fakeOperator();
  const hi = await userWrites(t, "wamid.HI", { type: "text", text: { body: "Hi" } });
  const upload = await apiV2("/media", t.key, {
    method: "POST",
    headers: { "Content-Type": "image/jpeg", "Content-Length": String(JPEG.byteLength) },
    body: JPEG,
  });
  expect(upload.status, await upload.clone().text()).toBe(201);
  const mediaId = (await json<{ id: string }>(upload)).id;
  // A second apart: the number admits 2 sends a second.
  const v2Send = (type: string, fields: unknown) => {
    clock.advance(1_000);
    return sendV2(t.key, { channelNumberId: t.numberId, to: USER, type, [type]: fields }).then(created);
  };
  const sent = {
    text: await created(await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Your order shipped", USER))),
    imageByLink: await v2Send("image", { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" }),
    imageByMediaId: await v2Send("image", { mediaId, caption: "Your receipt" }),
    interactive: await v2Send("interactive", {
      type: "button",
      body: "Your table for 4 is booked for Friday at 8 pm.",
      buttons: [
        { id: "confirm", title: "Confirm" },
        { id: "reschedule", title: "Reschedule" },
      ],
    }),
    location: await v2Send("location", {
      latitude: -23.5614,
      longitude: -46.6559,
      name: "Acme Paulista",
      address: "Av. Paulista, 1578",
    }),
    contacts: await v2Send("contacts", [
      { name: { formattedName: "Ana Souza", firstName: "Ana" }, phones: [{ phone: "+55 11 99999-8888" }] },
    ]),
    reaction: await v2Send("reaction", { messageId: hi, emoji: "👍" }),
  };
  // The number paces calls to one recipient: one a minute.
  for (let i = 0; i < Object.keys(sent).length; i++) {
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    clock.advance(60_000);
  }
  expect(operator.sends).toHaveLength(Object.keys(sent).length);
  expect(operator.uploads).toBe(1);
  const read = statusPayload(t.phoneNumberId, [
    {
      id: `wamid.${sent.imageByLink}`,
      status: "read",
      timestamp: seconds(clock.now()),
      recipient_id: USER,
      biz_opaque_callback_data: sent.imageByLink,
    },
  ]);
  expect((await postOperator(read)).status).toBe(200);
  const answer = await userWrites(t, "wamid.ANSWER", {
    type: "interactive",
    interactive: { type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } },
    context: { from: "15557770000", id: `wamid.${sent.interactive}` },
  });
  const mark = await apiV2(`/messages/${answer}/read`, t.key, { method: "POST", json: { typing: true } });
  expect(mark.status, await mark.clone().text()).toBe(200);
  expect(operator.marks).toBe(1);

  const ids = { hi, ...sent, answer };
  const views = new Map<string, { v1: string; v2: string; row: MessageRow }>();
  for (const id of Object.values(ids)) {
    const row = await workspaceStub(env, t.workspaceId).getMessage(id);
    expect(row).not.toBeNull();
    views.set(id, {
      v1: await bodyOf(await api(`/messages/${id}`, t.key)),
      v2: await bodyOf(await apiV2(`/messages/${id}`, t.key)),
      row: row!,
    });
  }
  // What each v2 view shows beyond v1's: settled before the day is archived.
  const v2Of = (id: string) => JSON.parse(views.get(id)!.v2) as Record<string, unknown>;
  expect(v2Of(sent.imageByLink)).toMatchObject({ type: "image", status: "read", image: { caption: "Your parcel" } });
  expect(v2Of(sent.imageByMediaId)).toMatchObject({ type: "image", image: { mediaId, caption: "Your receipt" } });
  expect(v2Of(sent.reaction)).toMatchObject({ type: "reaction", reaction: { messageId: hi, emoji: "👍" } });
  expect(v2Of(answer)).toMatchObject({
    answer: { type: "button_reply", id: "confirm", title: "Confirm" },
    replyTo: { messageId: sent.interactive },
    readAt: expect.any(String),
    typingIndicator: true,
  });

  const day = new Date(clock.now()).toISOString().slice(0, 10);
  // Past the plan's 30 days, the day is written to the archive and leaves the list.
  clock.advance(32 * DAY_MS);
  for (let i = 0; i < 10; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
  expect((await api(`/messages/${sent.text}`, t.key)).status).toBe(404);
  return { ids, views, day };
}

/**
 * The day's one part and manifest as the writer wrote them before v2's values were kept, at the
 * same keys: each line v1's view of the record. Returns the part's text.
 */
async function writeOldPart(t: Tenant, day: string, rows: MessageRow[]): Promise<string> {
  const dayNumber = Date.parse(`${day}T00:00:00Z`) / DAY_MS;
  const text = rows.map((r) => `${JSON.stringify(toMessageView(r))}\n`).join("");
  const gzipped = await new Response(
    new Blob([text]).stream().pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  await env.ARCHIVE.put(partKey(t.workspaceId, dayNumber, 0), gzipped, {
    httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
    customMetadata: { messages: String(rows.length) },
  });
  const manifest: ArchiveManifest = {
    day,
    parts: 1,
    messages: rows.length,
    archivedAt: new Date(clock.now()).toISOString(),
  };
  await env.ARCHIVE.put(manifestKey(t.workspaceId, dayNumber), JSON.stringify(manifest));
  return text;
}

describe("an archived day in each version's view", () => {
  it("v2's line of each message is its GET /api/v2/messages/{id} body and v1's its GET /api/v1/messages/{id} body, byte for byte", async () => {
    const t = await liveNumberTenant();
    const { ids, views, day } = await dayOfEveryKind(t);
    const v1 = await archiveText(t, day, "v1");
    const v2 = await archiveText(t, day, "v2");
    const v1Lines = linesById(v1);
    const v2Lines = linesById(v2);
    expect([...v1Lines.keys()].sort()).toEqual(Object.values(ids).sort());
    expect([...v2Lines.keys()]).toEqual([...v1Lines.keys()]);
    for (const [name, id] of Object.entries(ids)) {
      expect(v2Lines.get(id), `v2 line of ${name}`).toBe(views.get(id)!.v2);
      expect(v1Lines.get(id), `v1 line of ${name}`).toBe(views.get(id)!.v1);
    }
    // v1's whole download is what it served before v2's values were kept: each record's v1 view, a line each.
    const rows = [...v1Lines.keys()].map((id) => views.get(id)!.row);
    expect(v1).toBe(rows.map((r) => `${JSON.stringify(toMessageView(r))}\n`).join(""));
  });

  it("a day archived before v2's values were kept downloads as before: v1's lines as written, v2's derived from them", async () => {
    const t = await liveNumberTenant();
    const { views, day } = await dayOfEveryKind(t);
    const order = [...linesById(await archiveText(t, day, "v1")).keys()];
    const rows = order.map((id) => views.get(id)!.row);
    const oldLines = await writeOldPart(t, day, rows);

    expect(await archiveText(t, day, "v1")).toBe(oldLines);
    expect(await archiveText(t, day, "v2")).toBe(
      rows.map((r) => `${JSON.stringify(withStatusV2(toMessageView(r)))}\n`).join(""),
    );
  });

  it("a day is read as its parts decompress, a chunk at a time, never a whole part at once; both versions have every line", async () => {
    const t = await liveNumberTenant();
    const { views, day } = await dayOfEveryKind(t);
    const rows = [...linesById(await archiveText(t, day, "v1")).keys()].map((id) => views.get(id)!.row);
    // A part of 2,000 messages (~1.2 MB of lines): the records, again and again.
    const many = Array.from({ length: 2_000 }, (_, i) => rows[i % rows.length]!);
    const text = await writeOldPart(t, day, many);
    expect(text.length).toBeGreaterThan(1_000_000);
    // What the routes read: the runtime passes a response's body on in chunks of its own, so the
    // reading is watched where it happens, on the stream the routes turn line by line.
    const stream = await openArchive(env, t.workspaceId, Date.parse(`${day}T00:00:00Z`) / DAY_MS);
    const chunks: number[] = [];
    let read = "";
    const decoder = new TextDecoder();
    for await (const chunk of stream!) {
      chunks.push(chunk.byteLength);
      read += decoder.decode(chunk, { stream: true });
    }
    expect(read).toBe(text);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Math.max(...chunks)).toBeLessThan(text.length / 4);
    expect((await archiveText(t, day, "v1")).split("\n")).toHaveLength(many.length + 1);
    expect((await archiveText(t, day, "v2")).split("\n")).toHaveLength(many.length + 1);
  });
});
