import { z } from "zod";
import type { BeforeMessageCall, OutboundText, ReadMark, ReadMarkResult, SendResult, OperatorAdapter } from "./adapter";
import { now } from "../lib/clock";
import { classifyOperatorError, readMarkError } from "./error-codes";
import { isPhoneNumber } from "../messages/recipient";
import { withOperatorMedia, type MediaStoreAccess } from "./media-upload";

export interface OperatorApiConfig {
  baseUrl: string;
  version: string;
  phoneNumberId: string;
  accessToken: string;
  messagingProduct: string;
  timeoutMs: number;
  /** Adds CALL_STARTED_AT_HEADER to each call (local soak runs: their fake operator measures the pace as started). */
  stampCalls?: boolean;
  /** The number's media store: files a message names by our id are given to the operator first (media-upload.ts). */
  media?: MediaStoreAccess;
}

/** The time (ms since the epoch) at which the number object started the call. */
export const CALL_STARTED_AT_HEADER = "X-Call-Started-At";

/**
 * The operator's answer, as far as we read it. Newer API versions add fields
 * (stripped here), and a field of an unexpected shape reads as absent instead
 * of failing the whole answer.
 */
const lenient = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
const OperatorApiResponse = z.object({
  messages: lenient(z.array(z.object({ id: lenient(z.string()) }))),
  contacts: lenient(z.array(z.object({ input: lenient(z.string()), wa_id: lenient(z.string()) }))),
  error: lenient(
    z.object({
      code: lenient(z.union([z.number(), z.string()])),
      message: lenient(z.string()),
      error_subcode: lenient(z.number()),
      is_transient: lenient(z.boolean()),
      error_data: lenient(z.object({ details: lenient(z.string()) })),
    }),
  ),
});
type OperatorApiResponse = z.infer<typeof OperatorApiResponse>;

/** The operator's answer to a read mark: `{"success": true}`, or its error object. */
const ReadMarkResponse = OperatorApiResponse.pick({ error: true }).extend({ success: lenient(z.boolean()) });

/** The operator's messages API: one POST per message, our jobId echoed back in its status webhooks. */
export class OperatorApiAdapter implements OperatorAdapter {
  constructor(private readonly config: OperatorApiConfig) {}

  async send(message: OutboundText, beforeMessageCall?: BeforeMessageCall): Promise<SendResult> {
    const { baseUrl, version, phoneNumberId, accessToken, messagingProduct, timeoutMs, stampCalls, media } =
      this.config;
    let content = message.payload;
    if (media) {
      // Before the message's call: a file that cannot be given fails or retries it with nothing sent.
      const given = await withOperatorMedia(media, this.config, message.type, content);
      if (!given.ok) return given.result;
      // A payload that names one of our files comes back changed, after a read of the store and
      // maybe an upload of seconds: the pace slot taken when the call started is that long gone,
      // so the message call waits for a slot of its own.
      if (given.value !== content) await beforeMessageCall?.();
      content = given.value;
    }
    // No await from here until the request starts (the pace's slot was just taken).
    let res: Response;
    try {
      res = await fetch(`${baseUrl.replace(/\/+$/, "")}/${version}/${phoneNumberId}/messages`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${accessToken}`,
          "Content-Type": "application/json",
          ...(stampCalls ? { [CALL_STARTED_AT_HEADER]: String(now()) } : {}),
        },
        body: JSON.stringify({
          messaging_product: messagingProduct,
          recipient_type: "individual",
          // The operator prepends the business number's country code when '+' is missing: send it.
          // A user known only by a business-scoped user id is the operator's `recipient` (with `to` it would lose).
          ...(isPhoneNumber(message.to) ? { to: `+${message.to}` } : { recipient: message.to }),
          type: message.type,
          [message.type]: content,
          biz_opaque_callback_data: message.jobId,
        }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
    } catch (err) {
      // The runtime reports a refused connection and one lost after the request went out alike
      // ("Network connection lost."), and a timeout may have reached the operator: never resent.
      const timedOut = err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");
      return {
        kind: "unknown",
        message: timedOut
          ? `No answer within ${timeoutMs} ms.`
          : "The connection to the operator failed; the request may have reached it.",
      };
    }

    let payload: OperatorApiResponse = {};
    let readable = true;
    try {
      payload = OperatorApiResponse.catch({}).parse(await res.json());
    } catch {
      readable = false;
    }
    const upstreamMessageId = payload.messages?.[0]?.id;
    if (res.ok && typeof upstreamMessageId === "string") {
      const waId = payload.contacts?.[0]?.wa_id;
      return { kind: "accepted", upstreamMessageId, ...(waId ? { recipientId: waId } : {}) };
    }
    if (res.ok) {
      return {
        kind: "unknown",
        message: readable ? "The operator answered 2xx without a message id." : "The operator's answer was cut off.",
      };
    }

    const error = payload.error;
    const code = error?.code !== undefined ? String(error.code) : null;
    const retryAfter = Number(res.headers.get("retry-after"));
    return classifyOperatorError(res.status, code, error?.message ?? `HTTP ${res.status}`, {
      ...(error?.error_data?.details ? { details: error.error_data.details } : {}),
      ...(error?.is_transient !== undefined ? { isTransient: error.is_transient } : {}),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    });
  }

  /**
   * Marks an inbound message read (the operator's "mark messages as read" and "typing indicators":
   * `status: "read"` on the message id, and `typing_indicator: {type: "text"}` for the indicator).
   * Not a message: it takes no slot of the number's pace.
   */
  async markRead(mark: ReadMark): Promise<ReadMarkResult> {
    const { baseUrl, version, phoneNumberId, accessToken, messagingProduct, timeoutMs } = this.config;
    let res: Response;
    try {
      res = await fetch(`${baseUrl.replace(/\/+$/, "")}/${version}/${phoneNumberId}/messages`, {
        method: "POST",
        headers: { Authorization: `Bearer ${accessToken}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          messaging_product: messagingProduct,
          status: "read",
          message_id: mark.upstreamMessageId,
          ...(mark.typing ? { typing_indicator: { type: "text" } } : {}),
        }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
    } catch {
      return {
        kind: "refused",
        error: readMarkError({ kind: "unknown", message: "The operator did not answer the read mark." }),
      };
    }
    let payload: z.infer<typeof ReadMarkResponse> = {};
    try {
      payload = ReadMarkResponse.catch({}).parse(await res.json());
    } catch {
      // An unreadable body: the status decides.
    }
    if (res.ok && payload.success !== false) return { kind: "marked" };
    const error = payload.error;
    const code = error?.code !== undefined ? String(error.code) : null;
    return {
      kind: "refused",
      error: readMarkError(
        classifyOperatorError(res.ok ? 400 : res.status, code, error?.message ?? `HTTP ${res.status}`, {
          ...(error?.error_data?.details ? { details: error.error_data.details } : {}),
          ...(error?.is_transient !== undefined ? { isTransient: error.is_transient } : {}),
        }),
      ),
    };
  }
}
