import type { OutboundText, ReadMark, ReadMarkResult, SendResult, OperatorAdapter } from "./adapter";
import { classifyOperatorError } from "./error-codes";
import { storedMediaGone, type MediaStoreAccess } from "./media-upload";
import { sandboxTemplate } from "./sandbox-templates";
import { OperatorTemplatePayload, OUTBOUND_KINDS_V2 } from "../messages/content";

/**
 * Recipients with a documented behaviour in the sandbox, so that customers can
 * exercise every path of their integration. Any other recipient is sent.
 */
export const SANDBOX_MAGIC_NUMBERS = {
  /** Accepted, then reported failed by the operator a second later: customer-service window closed (131047). */
  windowClosed: "15550131047",
  /** Accepted, then reported failed by the operator a second later: recipient unreachable (131026). */
  unreachable: "15550131026",
  /** The first attempt is refused as "service unavailable" (131016, not processed); the retry is sent. */
  retryThenSent: "15550000500",
  /** The first two attempts hit the throughput limit (130429); then it is sent. */
  throttledThenSent: "15550130429",
  /** Always "service unavailable": fails with upstream_retries_exhausted after the last attempt. */
  alwaysDown: "15550000503",
  /** The call times out (outcome unknown: never sent again); the operator's status report settles it as sent 10 s later. */
  timeout: "15550000408",
} as const;

const MAGIC: ReadonlySet<string> = new Set(Object.values(SANDBOX_MAGIC_NUMBERS));

/** Delay of the sandbox's simulated status reports after the call. */
export const SANDBOX_REPORT_DELAY_MS = {
  failure: 1_000,
  delivered: 2_000,
  read: 5_000,
  unknownSettled: 10_000,
} as const;

/** The operator's code for free-form text outside the 24-hour customer-service window. */
const WINDOW_CLOSED_CODE = "131047";

/**
 * What the sandbox needs to know about a recipient to answer as the operator would: whether the
 * 24-hour window is open (the number object's contacts) and whether the customer marked it a test
 * contact (D1), which the operator's test numbers let through regardless.
 */
export interface SandboxRecipients {
  mayReceiveFreeForm(to: string): Promise<boolean>;
}

const SENDABLE: ReadonlySet<string> = new Set(OUTBOUND_KINDS_V2);

const sandboxId = (jobId: string) => `sandbox.${jobId}`;

export class SandboxAdapter implements OperatorAdapter {
  constructor(
    private readonly recipients: SandboxRecipients,
    /** The number's media store: a message naming a file deleted since fails as on a live number. */
    private readonly media?: MediaStoreAccess,
  ) {}

  async send(message: OutboundText): Promise<SendResult> {
    if (this.media) {
      const gone = await storedMediaGone(this.media, message.type, message.payload);
      if (gone) return gone;
    }
    // Templates are checked as the operator checks them: by name and language, and their status.
    // A type the operator does not know is refused, as the operator refuses it.
    if (!SENDABLE.has(message.type))
      return classifyOperatorError(400, "131051", `Sandbox: message type ${message.type} is not supported.`);
    const template = message.type === "template" ? OperatorTemplatePayload.safeParse(message.payload) : null;
    if (template && !template.success) return classifyOperatorError(400, "132000", "Sandbox: unreadable template.");
    if (template?.success) {
      const t = sandboxTemplate(template.data.name, template.data.language.code);
      if (!t) return classifyOperatorError(404, "132001", "Sandbox: template name does not exist in the translation.");
      if (t.status === "PAUSED") return classifyOperatorError(400, "132015", "Sandbox: template is paused.");
      if (t.status !== "APPROVED") return classifyOperatorError(400, "132016", "Sandbox: template is disabled.");
    }
    switch (message.to) {
      case SANDBOX_MAGIC_NUMBERS.windowClosed:
      case SANDBOX_MAGIC_NUMBERS.unreachable:
        // Like the operator: the call is accepted; the failure arrives later as a status.
        return {
          kind: "accepted",
          upstreamMessageId: sandboxId(message.jobId),
          later: [
            {
              afterMs: SANDBOX_REPORT_DELAY_MS.failure,
              status: "failed",
              errorCode: message.to.slice(-6),
              errorMessage: "Sandbox: simulated failure after acceptance.",
            },
          ],
        };
      case SANDBOX_MAGIC_NUMBERS.retryThenSent:
        if (message.attempt === 1)
          return classifyOperatorError(503, "131016", "Sandbox: simulated service unavailable.");
        break;
      case SANDBOX_MAGIC_NUMBERS.throttledThenSent:
        if (message.attempt <= 2) return classifyOperatorError(400, "130429", "Sandbox: simulated throughput limit.");
        break;
      case SANDBOX_MAGIC_NUMBERS.alwaysDown:
        return classifyOperatorError(503, "131016", "Sandbox: simulated outage.");
      case SANDBOX_MAGIC_NUMBERS.timeout:
        return {
          kind: "unknown",
          message: "Sandbox: simulated timeout.",
          later: [{ afterMs: SANDBOX_REPORT_DELAY_MS.unknownSettled, status: "sent" }],
        };
    }
    const id = sandboxId(message.jobId);
    // The magic recipients above behave as documented whatever the window (they stand for the
    // operator's own test numbers); any other recipient needs an open window or to be a test contact.
    // The operator accepts the call and reports the closed window afterwards, as a failed status.
    // A template is what the window does not apply to: it is how a business starts a conversation.
    if (!MAGIC.has(message.to) && !template && !(await this.recipients.mayReceiveFreeForm(message.to))) {
      return {
        kind: "accepted",
        upstreamMessageId: id,
        later: [
          {
            afterMs: SANDBOX_REPORT_DELAY_MS.failure,
            status: "failed",
            errorCode: WINDOW_CLOSED_CODE,
            errorMessage: "Sandbox: the recipient has not written in 24 hours and is not a test contact.",
          },
        ],
      };
    }
    // The operator reports a reaction sent, and never delivered or read.
    if (message.type === "reaction") return { kind: "accepted", upstreamMessageId: id };
    // Like a live number: delivered to the phone, then read by the user, each as an operator status.
    return {
      kind: "accepted",
      upstreamMessageId: id,
      later: [
        { afterMs: SANDBOX_REPORT_DELAY_MS.delivered, status: "delivered" },
        { afterMs: SANDBOX_REPORT_DELAY_MS.read, status: "read" },
      ],
    };
  }

  /**
   * Takes every read mark, as the operator does for a message of the conversation: what it showed
   * (the read mark, the typing indicator) is kept on the inbound message's record, as for any number.
   */
  async markRead(_mark: ReadMark): Promise<ReadMarkResult> {
    return { kind: "marked" };
  }
}
