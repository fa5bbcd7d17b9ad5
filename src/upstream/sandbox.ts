import type { OutboundText, SendResult, UpstreamAdapter } from "./adapter";
import { classifyHttpFailure, permanentError } from "./error-codes";

/**
 * Recipients with a documented behaviour in the sandbox, so that customers can
 * exercise every path of their integration. Any other recipient is sent.
 */
export const SANDBOX_MAGIC_NUMBERS = {
  /** Fails at once: customer-service window closed (operator code 131047). */
  windowClosed: "15550131047",
  /** Fails at once: recipient unreachable (operator code 131026). */
  unreachable: "15550131026",
  /** First attempt gets HTTP 500, the retry is sent. */
  retryThenSent: "15550000500",
  /** First two attempts get throughput errors (130429), then it is sent. */
  throttledThenSent: "15550130429",
  /** Always HTTP 500: fails with upstream_retries_exhausted after the last attempt. */
  alwaysDown: "15550000503",
  /** Never answers: the outcome is unknown and the message is never sent twice. */
  timeout: "15550000408",
} as const;

export class SandboxAdapter implements UpstreamAdapter {
  async send(message: OutboundText): Promise<SendResult> {
    switch (message.to) {
      case SANDBOX_MAGIC_NUMBERS.windowClosed:
        return { kind: "permanent", error: permanentError("131047") };
      case SANDBOX_MAGIC_NUMBERS.unreachable:
        return { kind: "permanent", error: permanentError("131026") };
      case SANDBOX_MAGIC_NUMBERS.retryThenSent:
        if (message.attempt === 1) return classifyHttpFailure(500, null, "Sandbox: simulated server error.");
        break;
      case SANDBOX_MAGIC_NUMBERS.throttledThenSent:
        if (message.attempt <= 2) return classifyHttpFailure(400, "130429", "Sandbox: simulated throughput limit.");
        break;
      case SANDBOX_MAGIC_NUMBERS.alwaysDown:
        return classifyHttpFailure(503, null, "Sandbox: simulated outage.");
      case SANDBOX_MAGIC_NUMBERS.timeout:
        return { kind: "unknown", message: "Sandbox: simulated timeout." };
    }
    return { kind: "accepted", upstreamMessageId: `sandbox.${message.jobId}` };
  }
}
