import { describe, expect, it } from "vitest";
import { readCappedBody } from "../../../src/lib/capped-body";

/** A request whose body arrives in the given chunks, with no Content-Length; `pulled` counts the chunks read. */
function chunked(chunks: number[]) {
  const state = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const size = chunks[state.pulled];
      if (size === undefined) return controller.close();
      state.pulled++;
      controller.enqueue(new Uint8Array(size).fill(state.pulled));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return {
    request: new Request("https://gateway.test/", { method: "POST", body, duplex: "half" } as RequestInit),
    state,
  };
}

describe("a request body read with a cap", () => {
  it("is read whole up to the cap exactly, across chunks", async () => {
    const { request } = chunked([3, 4, 3]);
    const body = await readCappedBody(request, 10);
    expect(body).toEqual(new Uint8Array([1, 1, 1, 2, 2, 2, 2, 3, 3, 3]));
  });

  it("stops at the chunk that passes the cap and cancels the rest unread", async () => {
    const { request, state } = chunked([6, 6, 6, 6]);
    expect(await readCappedBody(request, 10)).toBeNull();
    // The stream may have pulled one chunk ahead; the last is never read.
    expect(state.pulled).toBeLessThan(4);
    expect(state.cancelled).toBe(true);
  });

  it("refuses a declared Content-Length over the cap, or not a number, before reading a byte", async () => {
    const declared = (n: number, length = String(n)) =>
      new Request("https://gateway.test/", {
        method: "POST",
        body: "x".repeat(n),
        headers: { "Content-Length": length },
      });
    expect(await readCappedBody(declared(11), 10)).toBeNull();
    // The declaration alone decides: a short body declared too long is refused too.
    expect(await readCappedBody(declared(3, "11"), 10)).toBeNull();
    expect(await readCappedBody(declared(10), 10)).toHaveLength(10);
    // "1e1" is 10 to Number(), but no byte count.
    expect(await readCappedBody(declared(1, "1e1"), 10)).toBeNull();
  });

  it("is empty when there is no body", async () => {
    expect(await readCappedBody(new Request("https://gateway.test/"), 10)).toEqual(new Uint8Array(0));
  });
});
