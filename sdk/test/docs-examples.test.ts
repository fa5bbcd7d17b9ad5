import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceiver } from "./helpers/receiver.js";
import { createTenant } from "./helpers/tenant.js";

// docs/customers/webhooks.md shows how to verify a delivery with Node's crypto only. That code, exactly
// as the document has it, runs here against real deliveries of the local Worker.
const DOC = new URL("../../docs/customers/webhooks.md", import.meta.url);
const MARKER = "<!-- example: tested by sdk/test/docs-examples.test.ts";

type Verify = (secret: string, headers: IncomingHttpHeaders, rawBody: string) => boolean;

async function loadDocumentedVerify(): Promise<{ verify: Verify; cleanup: () => void }> {
  const text = readFileSync(DOC, "utf8");
  const at = text.indexOf(MARKER);
  expect(at, "the marked example in docs/customers/webhooks.md").toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)\n```/.exec(text.slice(at))![1]!;
  const dir = mkdtempSync(join(tmpdir(), "docs-example-"));
  const file = join(dir, "verify.mjs");
  writeFileSync(file, `${block}\nexport { verify };\n`);
  const module = (await import(file)) as { verify: Verify };
  return { verify: module.verify, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver(Number(process.env.SDK_TEST_RECEIVER_PORT ?? 8801) + 1);
});
afterAll(() => receiver.close());

describe("docs/customers/webhooks.md: verifying with Node's crypto only", () => {
  it("accepts a real delivery and refuses a tampered one or another secret", async () => {
    const { verify, cleanup } = await loadDocumentedVerify();
    try {
      const t = await createTenant();
      const client = t.client();
      const webhook = await client.webhooks.configure({
        channelNumberId: t.numberId,
        url: receiver.url("/docs-example"),
      });
      const { eventId } = await client.webhooks.test(webhook.id);
      const delivery = await receiver.delivered((d) => d.headers["webhook-id"] === eventId);

      expect(verify(webhook.secret, delivery.headers, delivery.body)).toBe(true);
      expect(verify(webhook.secret, delivery.headers, delivery.body.replace("test", "TEST"))).toBe(false);
      expect(verify(`whsec_${btoa("another secret of thirty-two bytes")}`, delivery.headers, delivery.body)).toBe(
        false,
      );
    } finally {
      cleanup();
    }
  });
});
