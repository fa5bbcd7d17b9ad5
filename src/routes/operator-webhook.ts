import { Hono } from "hono";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { hmacSha256, timingSafeEqualStrings, toHex } from "../lib/crypto";
import { log } from "../lib/log";
import { config } from "../config";
import { readCappedBody } from "../lib/capped-body";
import { planBatches } from "../lib/queue-batches";
import { splitPayload } from "../operator/webhook-payload";
import { applyOperatorItems } from "../queue/operator-webhook-events";

/** The operator's payloads reach 3 MiB (up to 1,000 updates); anything larger is refused before it is read. */
export const MAX_OPERATOR_PAYLOAD_BYTES = 3 * 1024 * 1024;

/**
 * The operator's webhooks (outside /api/v1, no API key). POSTs are verified
 * against the raw bytes and applied at once; what fails (or takes longer than
 * OPERATOR_APPLY_WITHIN_MS, 3 s) is queued, so that the operator never waits long on us and
 * a processing failure is retried.
 */
export const operatorWebhookRoutes = new Hono<AppEnv>()
  .get("/cloud/webhook", async (c) => {
    const mode = c.req.query("hub.mode");
    const token = c.req.query("hub.verify_token") ?? "";
    const challenge = c.req.query("hub.challenge") ?? "";
    if (
      mode === "subscribe" &&
      c.env.UPSTREAM_VERIFY_TOKEN &&
      (await timingSafeEqualStrings(token, c.env.UPSTREAM_VERIFY_TOKEN))
    ) {
      // Echoed as plain text (and nosniff, like every response): never interpretable as a page.
      return c.text(challenge, 200, { "Content-Type": "text/plain; charset=utf-8" });
    }
    throw new ApiError("forbidden", "Verification failed.");
  })
  .post("/cloud/webhook", async (c) => {
    // Size first (declared, then as read), signature second, parsing last.
    const raw = await readCappedBody(c.req.raw, MAX_OPERATOR_PAYLOAD_BYTES);
    if (raw === null)
      throw new ApiError("invalid_request", `Payload too large (more than ${MAX_OPERATOR_PAYLOAD_BYTES} bytes).`);
    const signature = c.req.header("x-hub-signature-256") ?? "";
    const expectedSignature = `sha256=${toHex(await hmacSha256(c.env.UPSTREAM_APP_SECRET, raw))}`;
    if (!signature || !(await timingSafeEqualStrings(signature, expectedSignature))) {
      throw new ApiError("unauthorized", "Missing or invalid X-Hub-Signature-256.");
    }
    let payload: unknown;
    try {
      payload = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      throw new ApiError("invalid_request", "The payload is not JSON.");
    }
    const items = splitPayload(payload);
    if (items === null) {
      // Not something we will ever understand: acknowledged, so the operator does not retry it for days.
      log("warn", "operator payload without entries; acknowledged", { requestId: c.get("requestId") });
      return c.text("EVENT_RECEIVED", 200);
    }
    // Applied at once (no queue operation on the way: each costs a write, a read and a delete);
    // what cannot be applied now, or not within OPERATOR_APPLY_WITHIN_MS, is queued item by item for the
    // consumer to retry. A failure to queue answers 500 and the operator retries the whole
    // payload (applying an item twice changes nothing).
    const applying = applyOperatorItems(items, c.env);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const deadline = new Promise<null>(
      (resolve) => (timer = setTimeout(() => resolve(null), config(c.env).operator.applyWithinMs)),
    );
    const outcomes = await Promise.race([applying, deadline]).finally(() => clearTimeout(timer));
    if (outcomes === null) c.executionCtx.waitUntil(applying);
    const left = items
      .map((body, index) => ({ key: index, body }))
      .filter(({ key }) => outcomes === null || outcomes[key] === "retry");
    const { batches, oversize } = planBatches(left);
    for (const batch of batches)
      await c.env.UPSTREAM_EVENT_QUEUE.sendBatch(batch.map((i) => ({ body: i.body, contentType: "json" as const })));
    if (oversize.length > 0) {
      // Too large for a queue message: taken only once applied. Waited for here (past the deadline
      // if need be); one that could not be applied is not acknowledged: the operator is answered
      // 500 and sends the whole payload again (applying the others twice changes nothing).
      const settled = outcomes ?? (await applying);
      const lost = oversize.filter((o) => settled[o.key] === "retry");
      if (lost.length > 0) {
        log("error", "operator item too large to queue and not applied; the operator retries the payload", {
          requestId: c.get("requestId"),
          items: lost.length,
          bytes: lost.map((o) => o.bytes).join(","),
        });
        throw new ApiError("internal_error", "An item of the payload could not be applied; send the payload again.");
      }
    }
    log("info", "operator webhook accepted", {
      requestId: c.get("requestId"),
      items: items.length,
      queued: left.length,
    });
    return c.text("EVENT_RECEIVED", 200);
  });
