import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { connectLiveNumber, operatorError } from "../helpers/operator";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import {
  mediaDownloadUrl,
  mediaFile,
  mediaLookupUrl,
  serveOperatorMedia,
  sha256Hex,
  type MediaFile,
} from "../helpers/operator-media";
import { customerWebhook } from "../helpers/number-edge";
import { Browser, html, signedInMember } from "../helpers/dashboard";
import { testWorkspace } from "../helpers/objects";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { mockNetworkPerTest } from "../helpers/webhook-net";
import { fakeClockPerTest } from "../helpers/clock";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { mediaKey } from "../../src/durable-objects/history/media-keys";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { HOT_BYTES_BUDGET } from "../../src/durable-objects/workspace/history-tiering";
import { DAY_MS, utcDay } from "../../src/lib/job-id";

// Images, audio, video, documents and stickers arrive as the operator's media id, valid 7 days and
// readable only with the number's token. Each is copied to R2 on receipt (the `media-copies` queue,
// its delays shortened by vitest.config.ts) and served by GET /messages/{id}/media. The operator's
// API (media lookup, download) is faked at the network edge; every other request fails.

// A fresh stretch of days for each test, at 10:00 UTC.
const clock = fakeClockPerTest(Date.UTC(2047, 4, 1, 10), (t) => (utcDay(t) + 40) * DAY_MS + 10 * 3_600_000);
const net = mockNetworkPerTest();
afterEach(() => {
  vi.restoreAllMocks();
});

type Live = { workspaceId: string; key: string; numberId: string; phoneNumberId: string; token: string };

/** A workspace on `plan` with a key and a live number. */
async function liveTenant(plan = "pro"): Promise<Live> {
  const workspaceId = await createWorkspace({ plan });
  const { key } = await createKey(workspaceId);
  return { workspaceId, key, ...(await connectLiveNumber(workspaceId)) };
}

/** A plan of this test's own, with small media caps (plans are rows of D1, seeded by migrations). */
async function planWithMediaCaps(maxItemBytes: number, dailyBytes: number): Promise<string> {
  const id = `media-${crypto.randomUUID().slice(0, 8)}`;
  await env.DB.prepare(
    `INSERT INTO plans (id, name, monthly_message_quota, max_numbers, message_history_days, media_max_item_bytes, media_daily_bytes)
     VALUES (?, 'Media test', 1000, 1, 7, ?, ?)`,
  )
    .bind(id, maxItemBytes, dailyBytes)
    .run();
  return id;
}

let senders = 0;

/** The operator's webhook of one inbound item of `type` (signed, through the real endpoint); returns our message id. */
async function receive(
  t: Live,
  type: "image" | "audio" | "video" | "document" | "sticker",
  file: MediaFile,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const from = `55119${String(++senders).padStart(8, "0")}`;
  const res = await postOperator(
    inboundPayload(t.phoneNumberId, [
      {
        from,
        id: `wamid.IN${crypto.randomUUID().slice(0, 8)}`,
        timestamp: seconds(clock.now()),
        type,
        [type]: { mime_type: file.mimeType, sha256: await sha256Hex(file.bytes), id: file.id, ...extra },
      },
    ]),
  );
  expect(res.status).toBe(200);
  const page = await json<{ data: { id: string }[] }>(await api(`/messages?direction=inbound&from=${from}`, t.key));
  expect(page.data).toHaveLength(1);
  return page.data[0]!.id;
}

type Media = {
  mimeType: string | null;
  caption: string | null;
  filename: string | null;
  size: number | null;
  sha256: string | null;
  url: string;
  available: boolean;
  status: string;
};
const mediaOf = async (t: Live, id: string) =>
  (await json<{ media: Media | null }>(await api(`/messages/${id}`, t.key))).media;

/** Waits until the copy of `id` is settled (stored, over the cap, failed); returns the message's media. */
const settled = (t: Live, id: string): Promise<Media> =>
  vi.waitFor(
    async () => {
      const media = await mediaOf(t, id);
      if (!media || media.status === "pending") throw new Error(`the copy of ${id} is not settled yet`);
      return media;
    },
    { timeout: 15_000, interval: 50 },
  );

const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());
const inR2 = async (t: Live, id: string) => env.ARCHIVE.get(mediaKey(t.workspaceId, utcDay(clock.now()), id));

describe("inbound media copied on receipt", () => {
  it("lands in R2 with its type; GET /messages/{id}/media streams the exact bytes, and the views and the event carry the facts", async () => {
    const t = await liveTenant();
    const hook = await customerWebhook(net, t.key, t.numberId);
    const file = mediaFile(150_000, "image/jpeg");
    const served = serveOperatorMedia(net, t.token, file);
    const id = await receive(t, "image", file, { caption: "The broken part" });

    const media = await settled(t, id);
    const sha256 = await sha256Hex(file.bytes);
    expect(media).toEqual({
      mimeType: "image/jpeg",
      caption: "The broken part",
      filename: null,
      size: 150_000,
      sha256,
      url: `/api/v1/messages/${id}/media`,
      available: true,
      status: "stored",
    });
    // One lookup and one download, with the number's token only.
    expect(served).toMatchObject({ lookups: 1, downloads: 1 });
    expect([...served.tokens]).toEqual([`Bearer ${t.token}`]);
    const object = await inR2(t, id);
    expect(object?.httpMetadata?.contentType).toBe("image/jpeg");
    expect(await bytesOf(new Response(object!.body))).toEqual(file.bytes);

    const res = await api(`/messages/${id}/media`, t.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("image/jpeg");
    expect(res.headers.get("Content-Length")).toBe("150000");
    expect(res.headers.get("Content-Disposition")).toBe(
      `inline; filename="image-${id}.jpeg"; filename*=UTF-8''image-${id}.jpeg`,
    );
    expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(await bytesOf(res)).toEqual(file.bytes);
    // Served from the copy: the operator is not asked again.
    expect(served).toMatchObject({ lookups: 1, downloads: 1 });

    // The list shows the same media; the event carries what was known on receipt.
    const listed = await json<{ data: { id: string; media: Media }[] }>(await api(`/messages?limit=5`, t.key));
    expect(listed.data.find((m) => m.id === id)?.media).toEqual(media);
    const event = await vi.waitFor(
      () => {
        const e = hook.events().find((x) => x.type === "message.received" && x.data.messageId === id);
        if (!e) throw new Error("no message.received yet");
        return e;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(event.data.media).toEqual({
      mimeType: "image/jpeg",
      caption: "The broken part",
      filename: null,
      size: null,
      sha256,
      url: `/api/v1/messages/${id}/media`,
    });
  });

  it("serves a document as an attachment under the sender's file name (an ASCII fallback and the exact UTF-8 name)", async () => {
    const t = await liveTenant();
    const file = mediaFile(4_321, "application/pdf");
    serveOperatorMedia(net, t.token, file);
    const id = await receive(t, "document", file, { filename: 'Fatura "março".pdf', caption: "Invoice" });
    expect(await settled(t, id)).toMatchObject({ filename: 'Fatura "março".pdf', status: "stored", size: 4_321 });

    const res = await api(`/messages/${id}/media`, t.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/pdf");
    expect(res.headers.get("Content-Length")).toBe("4321");
    expect(res.headers.get("Content-Disposition")).toBe(
      `attachment; filename="Fatura _mar_o_.pdf"; filename*=UTF-8''Fatura%20%22mar%C3%A7o%22.pdf`,
    );
    expect(await bytesOf(res)).toEqual(file.bytes);
  });

  it("answers 404 not_found for another workspace's message, a message without media, and an unknown id", async () => {
    const t = await liveTenant();
    const file = mediaFile(2_000);
    serveOperatorMedia(net, t.token, file);
    const id = await receive(t, "image", file);
    await settled(t, id);

    const other = await createTenant();
    const foreign = await expectError(await api(`/messages/${id}/media`, other.key), 404, "not_found");
    expect(foreign.error.message).toBe("Message not found.");
    // The same answer as for an id that names nothing.
    const unknown = await expectError(await api(`/messages/${crypto.randomUUID()}/media`, t.key), 404, "not_found");
    expect(unknown.error.message).toBe(foreign.error.message);

    const text = await postOperator(
      inboundPayload(t.phoneNumberId, [
        {
          from: "5511988887777",
          id: "wamid.TEXT1",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: "hi" },
        },
      ]),
    );
    expect(text.status).toBe(200);
    const page = await json<{ data: { id: string; media: unknown }[] }>(
      await api("/messages?direction=inbound&from=5511988887777", t.key),
    );
    expect(page.data[0]!.media).toBeNull();
    const none = await expectError(await api(`/messages/${page.data[0]!.id}/media`, t.key), 404, "not_found");
    expect(none.error.message).toMatch(/has no media/);
    // Without a key: 401, as everywhere.
    await expectError(await api(`/messages/${id}/media`, null), 401, "unauthorized");
  });
});

describe("beside the sender's identity and links", () => {
  it("an image from a user known only by a user id, replying to their earlier message: the copy keeps the sender and the link", async () => {
    const t = await liveTenant();
    const hook = await customerWebhook(net, t.key, t.numberId);
    const userId = `US.${String(++senders).padStart(20, "7")}`;
    const contact = { wa_id: "", user_id: userId, profile: { name: "Ana", username: "ana.s" } };
    const first = await postOperator(
      inboundPayload(
        t.phoneNumberId,
        [
          {
            from: "",
            from_user_id: userId,
            id: "wamid.ASK1",
            timestamp: seconds(clock.now()),
            type: "text",
            text: { body: "?" },
          },
        ],
        [contact],
      ),
    );
    expect(first.status).toBe(200);
    const file = mediaFile(3_000, "image/png");
    serveOperatorMedia(net, t.token, file);
    const res = await postOperator(
      inboundPayload(
        t.phoneNumberId,
        [
          {
            from: "",
            from_user_id: userId,
            id: "wamid.PIC1",
            timestamp: seconds(clock.now() + 1_000),
            type: "image",
            context: { from: "", id: "wamid.ASK1" },
            image: { mime_type: file.mimeType, sha256: await sha256Hex(file.bytes), id: file.id, caption: "This one" },
          },
        ],
        [contact],
      ),
    );
    expect(res.status).toBe(200);
    type View = {
      id: string;
      upstreamMessageId: string;
      from: string | null;
      fromUserId: string | null;
      profileName: string | null;
      username: string | null;
      replyTo: { messageId: string | null; upstreamMessageId: string } | null;
      media: Media | null;
    };
    const page = await json<{ data: View[] }>(await api("/messages?direction=inbound&limit=5", t.key));
    const ask = page.data.find((m) => m.upstreamMessageId === "wamid.ASK1")!;
    const pic = page.data.find((m) => m.upstreamMessageId === "wamid.PIC1")!;
    const sender = { from: null, fromUserId: userId, profileName: "Ana", username: "ana.s" };
    const replyTo = { messageId: ask.id, upstreamMessageId: "wamid.ASK1" };

    // The copy rewrites the record's details (media.copy): the sender and the link stay beside it.
    expect(await settled(t, pic.id)).toMatchObject({ status: "stored", size: 3_000, caption: "This one" });
    const view = await json<View>(await api(`/messages/${pic.id}`, t.key));
    expect(view).toMatchObject({ ...sender, replyTo, media: { status: "stored", available: true } });
    const stored = await env.ARCHIVE.get(mediaKey(t.workspaceId, utcDay(clock.now()), pic.id));
    expect(await bytesOf(new Response(stored!.body))).toEqual(file.bytes);

    const event = await vi.waitFor(
      () => {
        const e = hook.events().find((x) => x.type === "message.received" && x.data.messageId === pic.id);
        if (!e) throw new Error("no message.received yet");
        return e;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(event.data).toMatchObject({ ...sender, replyTo, media: { caption: "This one", mimeType: "image/png" } });
  });
});

describe("the plan's caps", () => {
  it("does not copy an item over the plan's item cap (nor download it), nor one past the day's bytes; the record and the 404 say so", async () => {
    const t = await liveTenant(await planWithMediaCaps(1_000, 2_500));
    const a = mediaFile(900);
    const big = mediaFile(1_200);
    const c = mediaFile(900);
    const d = mediaFile(900);
    const served = new Map([a, big, c, d].map((f) => [f.id, serveOperatorMedia(net, t.token, f)]));

    const idA = await receive(t, "image", a);
    expect(await settled(t, idA)).toMatchObject({ status: "stored", available: true });
    const idBig = await receive(t, "image", big);
    expect(await settled(t, idBig)).toMatchObject({ status: "over_cap", available: false, size: 1_200 });
    // Refused on the size the operator announced: not a byte downloaded, nothing in R2.
    expect(served.get(big.id)).toMatchObject({ lookups: 1, downloads: 0 });
    expect(await inR2(t, idBig)).toBeNull();
    const overItem = await expectError(await api(`/messages/${idBig}/media`, t.key), 404, "not_found");
    expect(overItem.error.message).toBe(
      "The media was not kept: its 1200 bytes are over the plan's 1000 bytes per item.",
    );

    const idC = await receive(t, "image", c);
    expect(await settled(t, idC)).toMatchObject({ status: "stored" });
    // 900 + 900 copied today: another 900 would pass the day's 2,500.
    const idD = await receive(t, "image", d);
    expect(await settled(t, idD)).toMatchObject({ status: "over_cap", available: false });
    expect(served.get(d.id)).toMatchObject({ downloads: 0 });
    expect(await inR2(t, idD)).toBeNull();
    const overDay = await expectError(await api(`/messages/${idD}/media`, t.key), 404, "not_found");
    expect(overDay.error.message).toBe(
      "The media was not kept: the plan's 2500 bytes of media per day were used up when it arrived.",
    );
    expect(await testDayState(t)).toMatchObject({ media: { bytes: 1_800, items: 2 } });
  });
});

const testDayState = (t: Live) => testWorkspace(t.workspaceId).dayState(utcDay(clock.now()));

describe("the plan's caps, at their edges", () => {
  it("copies an item of exactly the item cap, and one that fills the day's bytes exactly", async () => {
    const t = await liveTenant(await planWithMediaCaps(1_000, 1_500));
    const atCap = mediaFile(1_000);
    const rest = mediaFile(500);
    serveOperatorMedia(net, t.token, atCap);
    serveOperatorMedia(net, t.token, rest);
    const idAtCap = await receive(t, "image", atCap);
    expect(await settled(t, idAtCap)).toMatchObject({ status: "stored", size: 1_000 });
    const idRest = await receive(t, "image", rest);
    expect(await settled(t, idRest)).toMatchObject({ status: "stored", size: 500 });
    expect(await testDayState(t)).toMatchObject({ media: { bytes: 1_500, items: 2 } });
  });

  it("gives a copy's reserved bytes back to the day when the copy fails: the next item fits", async () => {
    const t = await liveTenant(await planWithMediaCaps(1_000, 1_500));
    const broken = mediaFile(1_000);
    const served = serveOperatorMedia(net, t.token, broken);
    // The size is known (reserved), then every download fails.
    net.receivers.set(mediaDownloadUrl(broken.id), () => {
      served.downloads++;
      return operatorError(500, 1, "Unknown error");
    });
    const idBroken = await receive(t, "image", broken);
    expect(await settled(t, idBroken)).toMatchObject({ status: "failed" });
    expect(served.downloads).toBe(4);
    expect(await testDayState(t)).toMatchObject({ media: { bytes: 0, items: 0 } });
    // 1,000 bytes still held for the failed copy would leave 500 of the day's 1,500.
    const next = mediaFile(1_000);
    serveOperatorMedia(net, t.token, next);
    const idNext = await receive(t, "image", next);
    expect(await settled(t, idNext)).toMatchObject({ status: "stored" });
  });
});

describe("the operator down at copy time", () => {
  it("retries the copy, which lands once the operator answers again", async () => {
    const t = await liveTenant();
    const file = mediaFile(10_000, "audio/ogg; codecs=opus");
    const served = serveOperatorMedia(net, t.token, file, {
      lookup: (n) => (n <= 2 ? operatorError(503, 2, "Service temporarily unavailable") : null),
    });
    const id = await receive(t, "audio", file);
    expect(await settled(t, id)).toMatchObject({
      status: "stored",
      available: true,
      mimeType: "audio/ogg; codecs=opus",
    });
    expect(served).toMatchObject({ lookups: 3, downloads: 1 });
    const res = await api(`/messages/${id}/media`, t.key);
    expect(res.headers.get("Content-Type")).toBe("audio/ogg; codecs=opus");
    expect(await bytesOf(res)).toEqual(file.bytes);
  });

  it("a lookup whose token the operator refuses makes the number's binding unverified", async () => {
    const t = await liveTenant();
    const file = mediaFile(10_000, "image/jpeg");
    // The business revoked the token the number was connected with: the operator serves its media to another one only.
    const served = serveOperatorMedia(net, `EAAG${crypto.randomUUID().replaceAll("-", "")}`, file);
    const id = await receive(t, "image", file);
    const row = await vi.waitFor(
      async () => {
        const r = await env.DB.prepare("SELECT unverified_since, last_operator_error FROM channel_numbers WHERE id = ?")
          .bind(t.numberId)
          .first<{ unverified_since: string | null; last_operator_error: string | null }>();
        if (!r?.unverified_since) throw new Error("not unverified yet");
        return r;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(served.lookups).toBeGreaterThan(0);
    expect(row.last_operator_error).toMatch(/media lookup \(HTTP 401, code 190\)/);
    // The copy goes on retrying (a token may be replaced meanwhile) until its bounded attempts end.
    expect(await settled(t, id)).toMatchObject({ status: "failed", available: false });
  });

  it("gives up after its bounded attempts and records the copy failed; GET says why", async () => {
    const t = await liveTenant();
    const file = mediaFile(10_000, "video/mp4");
    const served = serveOperatorMedia(net, t.token, file, { lookup: () => operatorError(500, 1, "Unknown error") });
    const id = await receive(t, "video", file);
    expect(await settled(t, id)).toMatchObject({ status: "failed", available: false });
    // MEDIA_COPY_RETRY_DELAYS_SECONDS has three delays in the tests: four attempts.
    expect(served).toMatchObject({ lookups: 4, downloads: 0 });
    const res = await expectError(await api(`/messages/${id}/media`, t.key), 404, "not_found");
    expect(res.error.message).toBe(
      "The media could not be copied from the operator. The operator refused the media lookup (HTTP 500, code 1).",
    );
  });

  it("records at once a copy the operator no longer has (an expired media id), without retrying", async () => {
    const t = await liveTenant();
    const file = mediaFile(10_000);
    const served = serveOperatorMedia(net, t.token, file, {
      lookup: () => operatorError(400, 100, "Unsupported get request. Object with ID does not exist"),
    });
    const id = await receive(t, "sticker", file);
    expect(await settled(t, id)).toMatchObject({ status: "failed" });
    expect(served).toMatchObject({ lookups: 1, downloads: 0 });
  });
});

describe("the number's token", () => {
  it("goes only to the operator's media host over https: a lookup naming any other place is refused without a request, and the copy is recorded failed", async () => {
    const t = await liveTenant();
    const elsewhere = [
      "https://collector.example.net/whatsapp_business/attachments/?mid=1",
      "https://lookaside.fbsbx.com.example.net/whatsapp_business/attachments/?mid=1",
      "https://lookaside.fbsbx.com:8443/whatsapp_business/attachments/?mid=1",
      "http://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1",
      "https://user@lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1",
    ];
    let downloads = 0;
    for (const url of elsewhere) {
      // Were the token sent there, it would be counted here, not refused by the edge.
      net.receivers.set(url, () => {
        downloads++;
        return new Response("stolen");
      });
      const file = mediaFile(1_000);
      net.receivers.set(mediaLookupUrl(file.id), () =>
        Response.json({ url, mime_type: file.mimeType, file_size: "1000", id: file.id }),
      );
      const id = await receive(t, "image", file);
      expect(await settled(t, id)).toMatchObject({ status: "failed", available: false });
      const res = await expectError(await api(`/messages/${id}/media`, t.key), 404, "not_found");
      expect(res.error.message).toBe(
        "The media could not be copied from the operator. The operator's media URL is not on a host we send the number's token to.",
      );
    }
    expect(downloads).toBe(0);
  });
});

describe("before the copy is there", () => {
  it("GET fetches the file from the operator (streamed through), and the copy still lands", async () => {
    const t = await liveTenant();
    const file = mediaFile(60_000, "image/png");
    // The copy job's lookup (the first) is held until the test lets it go. It polls a flag: a promise
    // settled by the test would not wake the queue consumer's own request.
    let released = false;
    const served = serveOperatorMedia(net, t.token, file, {
      lookup: async (n) => {
        while (n === 1 && !released) await new Promise((resolve) => setTimeout(resolve, 10));
        return null;
      },
    });
    const id = await receive(t, "image", file);
    await vi.waitFor(() => expect(served.lookups).toBe(1), { timeout: 15_000, interval: 20 });
    expect(await mediaOf(t, id)).toMatchObject({ status: "pending", available: false });

    const res = await api(`/messages/${id}/media`, t.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("image/png");
    expect(res.headers.get("Content-Length")).toBe("60000");
    expect(res.headers.get("Cache-Control")).toBe("private, no-store");
    expect(await bytesOf(res)).toEqual(file.bytes);
    expect(await inR2(t, id)).toBeNull();

    released = true;
    expect(await settled(t, id)).toMatchObject({ status: "stored" });
    expect(served.downloads).toBe(2);
  });
});

describe("fetched through from the operator", () => {
  /** The operator's answers for `file` with no size anywhere (no file_size, a chunked download); the copy job's lookup held until `release()`. */
  function servedWithoutSize(file: MediaFile) {
    const state = { lookups: 0, released: false, cancelled: false, sent: 0 };
    net.receivers.set(mediaLookupUrl(file.id), async () => {
      const n = ++state.lookups;
      while (n === 1 && !state.released) await new Promise((resolve) => setTimeout(resolve, 10));
      return Response.json({ url: mediaDownloadUrl(file.id), mime_type: file.mimeType, id: file.id });
    });
    net.receivers.set(mediaDownloadUrl(file.id), () => {
      let at = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= file.bytes.length) return controller.close();
          const chunk = file.bytes.slice(at, at + 2_000);
          at += chunk.length;
          state.sent += chunk.length;
          controller.enqueue(chunk);
        },
        cancel() {
          state.cancelled = true;
        },
      });
      return new Response(body, { headers: { "Content-Type": file.mimeType } });
    });
    return state;
  }

  it("stops at the plan's item cap when the operator announces no size: an item of the cap passes whole, a larger one breaks off and its download is cancelled", async () => {
    const t = await liveTenant(await planWithMediaCaps(10_000, 1_000_000));
    const exact = mediaFile(10_000);
    const over = mediaFile(40_000);
    const served = [servedWithoutSize(exact), servedWithoutSize(over)];
    const ids = [await receive(t, "image", exact), await receive(t, "image", over)];
    await vi.waitFor(() => expect(served.map((s) => s.lookups)).toEqual([1, 1]), { timeout: 15_000, interval: 20 });

    const whole = await api(`/messages/${ids[0]}/media`, t.key);
    expect(whole.status).toBe(200);
    expect(await bytesOf(whole)).toEqual(exact.bytes);

    // The runtime reports the response it could not finish (as it would in production's logs).
    const broken = await expectRuntimeLog(/over the plan's 10000 bytes per item/);
    const cut = await api(`/messages/${ids[1]}/media`, t.key);
    expect(cut.status).toBe(200);
    await expect(cut.arrayBuffer()).rejects.toThrow();
    await broken.seen();
    await broken.end();
    await vi.waitFor(() => expect(served[1]!.cancelled).toBe(true), { timeout: 5_000, interval: 20 });
    // Read ahead by a chunk or so at most, never the whole file.
    expect(served[1]!.sent).toBeLessThan(over.bytes.length);
    for (const s of served) s.released = true;
    await settled(t, ids[0]!);
    await settled(t, ids[1]!);
  });

  it("has a budget per workspace, the API and the dashboard together; copies once made are not counted", async () => {
    const t = await liveTenant();
    const file = mediaFile(1_000, "image/png");
    let released = false;
    const served = serveOperatorMedia(net, t.token, file, {
      lookup: async (n) => {
        while (n === 1 && !released) await new Promise((resolve) => setTimeout(resolve, 10));
        return null;
      },
    });
    const id = await receive(t, "image", file);
    await vi.waitFor(() => expect(served.lookups).toBe(1), { timeout: 15_000, interval: 20 });
    const viewer = await signedInMember(t.workspaceId, "viewer");
    // 60 per minute: 40 through the API and 20 through the dashboard (the clock stands still).
    for (let i = 0; i < 60; i++) {
      const res =
        i < 40
          ? await api(`/messages/${id}/media`, t.key)
          : await viewer.browser.get(`/dashboard/messages/${id}/media`);
      expect(res.status, `fetch-through ${i + 1}`).toBe(200);
      await res.arrayBuffer();
    }
    expect(served.lookups).toBe(61);
    const refused = await api(`/messages/${id}/media`, t.key);
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toContain("60 media files fetched from the operator per 60 s per workspace");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    const page = await viewer.browser.get(`/dashboard/messages/${id}/media`);
    expect(page.status).toBe(429);
    // Refused before the operator was asked.
    expect(served.lookups).toBe(61);

    released = true;
    expect(await settled(t, id)).toMatchObject({ status: "stored" });
    const copy = await api(`/messages/${id}/media`, t.key);
    expect(copy.status).toBe(200);
    expect(await bytesOf(copy)).toEqual(file.bytes);
  });
});

describe("the end of the plan's history window", () => {
  it("deletes a day's copies with the day; a later day's copies stay", async () => {
    const t = await liveTenant("free"); // 7 days
    const early = mediaFile(3_000);
    const late = mediaFile(3_000);
    serveOperatorMedia(net, t.token, early);
    serveOperatorMedia(net, t.token, late);
    const day = utcDay(clock.now());
    const idEarly = await receive(t, "image", early);
    await settled(t, idEarly);
    clock.advance(DAY_MS);
    const idLate = await receive(t, "image", late);
    await settled(t, idLate);
    expect(await env.ARCHIVE.head(mediaKey(t.workspaceId, day, idEarly))).not.toBeNull();

    // The day's last moment plus 7 days: the day is archived, and its media deleted.
    clock.set((day + 1 + 7) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    // Inbound messages alone arm no alarm while events leave at once (the test setting): arm one,
    // as the publishing delay of a deployment does, with the budget unchanged.
    await testWorkspace(t.workspaceId).setHotBytesBudget(HOT_BYTES_BUDGET);
    for (let i = 0; i < 6; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({ archived: { messages: 1 } });
    expect(await env.ARCHIVE.head(mediaKey(t.workspaceId, day, idEarly))).toBeNull();
    await expectError(await api(`/messages/${idEarly}/media`, t.key), 404, "not_found");
    // The next day is within the window: its copy and its message stay.
    expect(await env.ARCHIVE.head(mediaKey(t.workspaceId, day + 1, idLate))).not.toBeNull();
    const res = await api(`/messages/${idLate}/media`, t.key);
    expect(await bytesOf(res)).toEqual(late.bytes);
  });
});

describe("what a browser makes of a file", () => {
  it("serves a document of a type outside images, audio, video and PDF as application/octet-stream, sandboxed, same-origin only, in the API and the dashboard", async () => {
    const t = await liveTenant();
    const files = [
      { name: "x.js", type: "text/javascript" },
      { name: "x.html", type: "text/html; charset=utf-8" },
      { name: "x.svg", type: "image/svg+xml" },
    ].map((f) => ({ ...f, file: mediaFile(1_000, f.type) }));
    for (const f of files) serveOperatorMedia(net, t.token, f.file);
    const ids = [];
    for (const f of files) ids.push(await receive(t, "document", f.file, { filename: f.name }));
    const viewer = await signedInMember(t.workspaceId, "viewer");
    for (const [i, id] of ids.entries()) {
      const f = files[i]!;
      // The record says what the sender declared; only the served type is neutral.
      expect(await settled(t, id)).toMatchObject({ status: "stored", mimeType: f.type });
      for (const res of [
        await api(`/messages/${id}/media`, t.key),
        await viewer.browser.get(`/dashboard/messages/${id}/media`),
      ]) {
        expect(res.status).toBe(200);
        expect(res.headers.get("Content-Type")).toBe("application/octet-stream");
        // The media sandbox, not the dashboard's page policy (whose script-src 'self' would run it).
        expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
        expect(res.headers.get("Cross-Origin-Resource-Policy")).toBe("same-origin");
        expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
        expect(res.headers.get("Content-Disposition")).toMatch(new RegExp(`^attachment; filename="${f.name}"`));
        expect(await bytesOf(res)).toEqual(f.file.bytes);
      }
    }
  });

  it("keeps the type of an image, an audio, a video and a PDF, and the sandbox on each", async () => {
    const t = await liveTenant();
    const files = [
      { type: "image" as const, file: mediaFile(500, "image/png") },
      { type: "audio" as const, file: mediaFile(500, "audio/ogg; codecs=opus") },
      { type: "video" as const, file: mediaFile(500, "video/mp4") },
      { type: "document" as const, file: mediaFile(500, "application/pdf") },
      { type: "sticker" as const, file: mediaFile(500, "image/webp") },
    ];
    for (const f of files) serveOperatorMedia(net, t.token, f.file);
    const viewer = await signedInMember(t.workspaceId, "viewer");
    for (const f of files) {
      const id = await receive(t, f.type, f.file);
      await settled(t, id);
      for (const res of [
        await api(`/messages/${id}/media`, t.key),
        await viewer.browser.get(`/dashboard/messages/${id}/media`),
      ]) {
        expect(res.headers.get("Content-Type")).toBe(f.file.mimeType);
        expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
        expect(res.headers.get("Cross-Origin-Resource-Policy")).toBe("same-origin");
      }
    }
  });

  it("lets the caller keep a copy it checks on each use: no-cache with an ETag, answered 304 while the file is the same", async () => {
    const t = await liveTenant();
    const file = mediaFile(3_000, "image/jpeg");
    serveOperatorMedia(net, t.token, file);
    const id = await receive(t, "image", file);
    await settled(t, id);
    const first = await api(`/messages/${id}/media`, t.key);
    expect(first.status).toBe(200);
    expect(first.headers.get("Cache-Control")).toBe("private, no-cache");
    const etag = first.headers.get("ETag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    await first.arrayBuffer();

    for (const asked of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await api(`/messages/${id}/media`, t.key, { headers: { "If-None-Match": asked } });
      expect(again.status, asked).toBe(304);
      expect(again.headers.get("ETag")).toBe(etag);
      expect(again.headers.get("Cache-Control")).toBe("private, no-cache");
      expect((await again.arrayBuffer()).byteLength).toBe(0);
    }
    const changed = await api(`/messages/${id}/media`, t.key, { headers: { "If-None-Match": '"other"' } });
    expect(changed.status).toBe(200);
    expect(await bytesOf(changed)).toEqual(file.bytes);
    // The check comes after the key's: another workspace's key learns nothing from a matching ETag.
    const other = await createTenant();
    await expectError(
      await api(`/messages/${id}/media`, other.key, { headers: { "If-None-Match": etag } }),
      404,
      "not_found",
    );
    // The dashboard never lets the browser keep a member's file (its pages are no-store), and answers the check alike.
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const page = await viewer.browser.get(`/dashboard/messages/${id}/media`, { "If-None-Match": etag });
    expect(page.status).toBe(304);
    expect(page.headers.get("Cache-Control")).toBe("no-store");
  });
});

describe("the dashboard", () => {
  it("shows an image inline and offers a document as a download, through the member's session only", async () => {
    const t = await liveTenant();
    const image = mediaFile(5_000, "image/jpeg");
    const doc = mediaFile(7_000, "application/pdf");
    serveOperatorMedia(net, t.token, image);
    serveOperatorMedia(net, t.token, doc);
    const idImage = await receive(t, "image", image, { caption: "Front door" });
    const idDoc = await receive(t, "document", doc, { filename: "report.pdf" });
    await settled(t, idImage);
    await settled(t, idDoc);
    const viewer = await signedInMember(t.workspaceId, "viewer");

    const page = await html(await viewer.browser.get(`/dashboard/messages/${idImage}`));
    expect(page).toContain(`<img src="/dashboard/messages/${idImage}/media" alt="Front door"/>`);
    const img = await viewer.browser.get(`/dashboard/messages/${idImage}/media`);
    expect(img.status).toBe(200);
    expect(img.headers.get("Content-Type")).toBe("image/jpeg");
    expect(await bytesOf(img)).toEqual(image.bytes);

    const docPage = await html(await viewer.browser.get(`/dashboard/messages/${idDoc}`));
    expect(docPage).not.toContain("<img");
    expect(docPage).toContain(
      `<a href="/dashboard/messages/${idDoc}/media" download="report.pdf">Download report.pdf</a>`,
    );
    const download = await viewer.browser.get(`/dashboard/messages/${idDoc}/media`);
    expect(download.headers.get("Content-Disposition")).toMatch(/^attachment; filename="report.pdf"/);
    expect(await bytesOf(download)).toEqual(doc.bytes);

    // Another workspace's member, and no session at all.
    const stranger = await signedInMember((await createTenant()).workspaceId, "owner");
    expect((await stranger.browser.get(`/dashboard/messages/${idImage}/media`)).status).toBe(404);
    const anonymous = await new Browser().get(`/dashboard/messages/${idImage}/media`);
    expect(anonymous.status).toBe(303);
  });
});
