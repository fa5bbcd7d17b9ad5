import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant } from "./helpers/tenant.js";

// docs/webhooks.md shows how to verify a delivery with Node's crypto only. That code, exactly
// as the document has it, runs here against real deliveries of the local Worker.
const DOC = new URL("../../docs/webhooks.md", import.meta.url);
const MARKER = "<!-- example: tested by sdk/test/docs-examples.test.ts";

type Verify = (secret: string, headers: IncomingHttpHeaders, rawBody: string) => boolean;

async function loadDocumentedVerify(): Promise<{ verify: Verify; cleanup: () => void }> {
  const text = readFileSync(DOC, "utf8");
  const at = text.indexOf(MARKER);
  expect(at, "the marked example in docs/webhooks.md").toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)\n```/.exec(text.slice(at))![1]!;
  const dir = mkdtempSync(join(tmpdir(), "docs-example-"));
  const file = join(dir, "verify.mjs");
  writeFileSync(file, `${block}\nexport { verify };\n`);
  const module = (await import(file)) as { verify: Verify };
  return { verify: module.verify, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const RECEIVER_PORT = Number(process.env.SDK_TEST_RECEIVER_PORT ?? 8801) + 1;
const deliveries: { body: string; headers: IncomingHttpHeaders }[] = [];
let server: Server;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(RECEIVER_PORT, "127.0.0.1", resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("docs/webhooks.md: verifying with Node's crypto only", () => {
  it("accepts a real delivery and refuses a tampered one or another secret", async () => {
    const { verify, cleanup } = await loadDocumentedVerify();
    try {
      const t = await createTenant();
      const client = t.client();
      const webhook = await client.webhooks.configure({ channelNumberId: t.numberId, url: `http://127.0.0.1:${RECEIVER_PORT}/docs-example` });
      const { eventId } = await client.webhooks.test(webhook.id);
      let delivery: (typeof deliveries)[number] | undefined;
      for (let waited = 0; !delivery && waited < 20_000; waited += 100) {
        delivery = deliveries.find((d) => d.headers["webhook-id"] === eventId);
        if (!delivery) await new Promise((r) => setTimeout(r, 100));
      }
      expect(delivery, "the test event arrived").toBeDefined();

      expect(verify(webhook.secret, delivery!.headers, delivery!.body)).toBe(true);
      expect(verify(webhook.secret, delivery!.headers, delivery!.body.replace("test", "TEST"))).toBe(false);
      expect(verify(`whsec_${btoa("another secret of thirty-two bytes")}`, delivery!.headers, delivery!.body)).toBe(false);
    } finally {
      cleanup();
    }
  });
});
