import type { OutboundText, SendResult, UpstreamAdapter } from "./adapter";
import { classifyHttpFailure } from "./error-codes";

export interface CloudApiConfig {
  baseUrl: string;
  version: string;
  phoneNumberId: string;
  accessToken: string;
  messagingProduct: string;
  timeoutMs: number;
}

interface CloudApiResponse {
  messages?: { id?: string }[];
  error?: { code?: number | string; message?: string };
}

/** The operator's Cloud API: one POST per message, our jobId echoed back in its status webhooks. */
export class CloudApiAdapter implements UpstreamAdapter {
  constructor(private readonly config: CloudApiConfig) {}

  async send(message: OutboundText): Promise<SendResult> {
    const { baseUrl, version, phoneNumberId, accessToken, messagingProduct, timeoutMs } = this.config;
    let res: Response;
    try {
      res = await fetch(`${baseUrl.replace(/\/+$/, "")}/${version}/${phoneNumberId}/messages`, {
        method: "POST",
        headers: { Authorization: `Bearer ${accessToken}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          messaging_product: messagingProduct,
          recipient_type: "individual",
          to: message.to,
          type: "text",
          text: { body: message.body },
          biz_opaque_callback_data: message.jobId,
        }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
    } catch (err) {
      // A timeout may have reached the operator: its outcome is unknown, never retried.
      if (err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError")) {
        return { kind: "unknown", message: `No answer within ${timeoutMs} ms.` };
      }
      // A connection failure happens before the request is delivered.
      return { kind: "retryable", upstreamCode: null, message: "Network error reaching the operator." };
    }

    let payload: CloudApiResponse = {};
    try {
      payload = (await res.json()) as CloudApiResponse;
    } catch {
      // An unreadable body is classified by its status alone.
    }
    const upstreamMessageId = payload.messages?.[0]?.id;
    if (res.ok && upstreamMessageId) return { kind: "accepted", upstreamMessageId };
    if (res.ok) return { kind: "unknown", message: "The operator answered 2xx without a message id." };

    const code = payload.error?.code !== undefined ? String(payload.error.code) : null;
    const retryAfter = Number(res.headers.get("retry-after"));
    return classifyHttpFailure(
      res.status,
      code,
      payload.error?.message ?? `HTTP ${res.status}`,
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
    );
  }
}
