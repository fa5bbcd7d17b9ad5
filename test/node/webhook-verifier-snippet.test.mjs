import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { newWebhookSecret, signatureHeaders } from "../../src/webhooks/signature.ts";

// The hand-written verifier of docs/customers/webhooks.md, run exactly as a customer copies it: the code
// block is cut out of the Markdown, saved as a module and called with a delivery signed by the
// gateway's own signing code.
const markdown = readFileSync(new URL("../../docs/customers/webhooks.md", import.meta.url), "utf8");

function snippet() {
  const start = markdown.indexOf("Without a library, with Node's `crypto` only:");
  const block = /```js\n([\s\S]*?)```/.exec(markdown.slice(start));
  if (start < 0 || !block) throw new Error("the verifier snippet is missing from docs/customers/webhooks.md");
  return block[1];
}

let verify;
// Shared and read-only: the snippet's function, loaded once; no test changes it.
beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), "verifier-")), "verify.mjs");
  writeFileSync(file, `${snippet()}\nexport { verify };\n`);
  ({ verify } = await import(pathToFileURL(file).href));
});

afterEach(() => {
  vi.useRealTimers();
});

const NOW = 1_900_000_000;
const body = JSON.stringify({
  type: "message.status",
  timestamp: "2030-03-17T17:46:40.000Z",
  data: { messageId: "m-1", status: "sent" },
});

/** A signature over an arbitrary timestamp text, as an attacker holding an old request or a buggy sender could produce. */
function signedWith(secret, id, ts, raw) {
  const mac = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${id}.${ts}.${raw}`)
    .digest("base64");
  return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${mac}` };
}

describe("docs/customers/webhooks.md: the verifier without a library", () => {
  it("accepts a delivery signed by the gateway, as a Standard Webhooks library does", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(NOW * 1000);
    const secret = newWebhookSecret();
    const headers = await signatureHeaders(secret, "evt_0123456789abcdef0123456789abcdef", NOW - 30, body);
    expect(verify(secret, headers, body)).toBe(true);
    expect(verify(secret, headers, Buffer.from(body))).toBe(true);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it.each(["abc", "", " 1900000000", "1.9e9", "1900000000.5", "-1", "0x71413fc0", "NaN", "Infinity"])(
    "refuses a correctly signed timestamp %j that is not whole Unix seconds",
    (ts) => {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(NOW * 1000);
      const secret = newWebhookSecret();
      expect(verify(secret, signedWith(secret, "evt_1", ts, body), body)).toBe(false);
    },
  );

  it("refuses timestamps more than 5 minutes away, either side", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(NOW * 1000);
    const secret = newWebhookSecret();
    for (const ts of [NOW - 301, NOW + 301])
      expect(verify(secret, await signatureHeaders(secret, "evt_2", ts, body), body)).toBe(false);
    for (const ts of [NOW - 300, NOW + 300])
      expect(verify(secret, await signatureHeaders(secret, "evt_2", ts, body), body)).toBe(true);
  });

  it("refuses another secret, a changed body or id, and missing headers; accepts any one valid signature of several", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(NOW * 1000);
    const secret = newWebhookSecret();
    const headers = await signatureHeaders(secret, "evt_3", NOW, body);
    expect(verify(newWebhookSecret(), headers, body)).toBe(false);
    expect(verify(secret, headers, body.replace("sent", "failed"))).toBe(false);
    expect(verify(secret, { ...headers, "webhook-id": "evt_4" }, body)).toBe(false);
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const { [name]: _dropped, ...rest } = headers;
      expect(verify(secret, rest, body)).toBe(false);
    }
    const rotated = {
      ...headers,
      "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")} ${headers["webhook-signature"]}`,
    };
    expect(verify(secret, rotated, body)).toBe(true);
    expect(
      verify(secret, { ...headers, "webhook-signature": headers["webhook-signature"].replace("v1,", "v2,") }, body),
    ).toBe(false);
  });
});
