import { describe, expect, it } from "vitest";
import { ApiError, messageV2 } from "../src/index.js";
import { createTenant } from "./helpers/tenant.js";

// client.v2.media against the Worker: a file uploaded as the request's body, read back, listed, sent
// as an image by its id with the typed builder, and deleted; what the store refuses.

const CONTACT = "5511999998888";
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d];

/** A PNG's signature, then filler: the store checks a file's first bytes against its type. */
function png(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  bytes.set(PNG_SIGNATURE);
  for (let i = PNG_SIGNATURE.length; i < size; i++) bytes[i] = i % 251;
  return bytes;
}

const sha256 = async (bytes: Uint8Array<ArrayBuffer>) =>
  Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");

describe("client.v2.media", () => {
  it("uploads a PNG, reads and lists it, sends it as an image by its id, and deletes it", async () => {
    const t = await createTenant();
    const client = t.client();
    const bytes = png(2048);
    const file = new File([bytes], "parcel.png", { type: "image/png" });

    const media = await client.v2.media.upload(file);
    expect(media).toMatchObject({
      kind: "image",
      contentType: "image/png",
      size: 2048,
      filename: "parcel.png",
      sha256: await sha256(bytes),
    });
    expect(await client.v2.media.get(media.id)).toEqual(media);
    expect((await client.v2.media.list().toArray(100)).map((m) => m.id)).toEqual([media.id]);

    const sent = await client.v2.messages.send(
      messageV2.image({ channelNumberId: t.numberId, to: CONTACT }, { mediaId: media.id, caption: "Your parcel" }),
    );
    const message = await client.v2.messages.get(sent.jobId);
    expect(message).toMatchObject({ direction: "outbound", type: "image", text: { body: "[image] Your parcel" } });
    if (message.direction !== "outbound") throw new Error("an outbound message");
    expect(message.image).toMatchObject({ mediaId: media.id, caption: "Your parcel" });

    await client.v2.media.delete(media.id);
    await expect(client.v2.media.get(media.id)).rejects.toMatchObject({ status: 404, code: "not_found" });
    expect(await client.v2.media.list().toArray(100)).toEqual([]);
  });

  it("uploads bytes with the type and name given, and a Blob's own type", async () => {
    const t = await createTenant();
    const client = t.client();
    const named = await client.v2.media.upload(png(64), { contentType: "image/png", filename: "label.png" });
    expect(named).toMatchObject({ kind: "image", contentType: "image/png", size: 64, filename: "label.png" });
    const unnamed = await client.v2.media.upload(new Blob([png(32)], { type: "image/png" }));
    expect(unnamed).toMatchObject({ size: 32, filename: null });
    expect((await client.v2.media.list({ limit: 1 }).toArray(10)).map((m) => m.id)).toEqual([named.id, unnamed.id]);
  });

  it("refuses a file whose bytes are not its type (400 naming the rule) and stores nothing", async () => {
    const t = await createTenant();
    const client = t.client();
    const err = await client.v2.media.upload(new Blob([png(2048)], { type: "image/jpeg" })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 400, code: "invalid_request" });
    expect((err as ApiError).details).toEqual([expect.objectContaining({ rule: "media_signature" })]);
    expect(await client.v2.media.list().toArray(10)).toEqual([]);
  });

  it("refuses a file without a type before sending anything", async () => {
    const t = await createTenant();
    const seen: string[] = [];
    const client = t.client({
      fetch: (request) => {
        seen.push(request.url);
        return fetch(request);
      },
    });
    await expect(client.v2.media.upload(png(64))).rejects.toBeInstanceOf(TypeError);
    expect(seen).toEqual([]);
  });
});
