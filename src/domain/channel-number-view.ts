import { z } from "@hono/zod-openapi";
import { NumberHealth } from "./number-health";

export const ChannelNumber = z
  .object({
    id: z.string().uuid().openapi({ description: "Use as `channelNumberId`." }),
    displayPhoneNumber: z.string(),
    status: z.literal("connected"),
    // `upstream` and `cloud` are the published contract (and the stored `upstream_type`): they keep their old words.
    upstream: z
      .enum(["sandbox", "cloud"])
      .openapi({ description: "`sandbox` numbers deliver nowhere; see the sandbox docs." }),
    createdAt: z.string().datetime(),
  })
  .openapi("ChannelNumber");

/** What GET /channel-numbers/{id} shows about a number's sending. */
export interface NumberSendingState {
  paused: {
    code: string;
    message: string;
    upstreamCode: string | null;
    reportedBy: "answer" | "webhook";
    since: string;
    nextAttemptAt: string;
  } | null;
}

export const NumberSending = z
  .object({
    state: z.enum(["active", "paused"]).openapi({
      description:
        "`paused`: the operator refused the number's account or credentials (an expired token, a blocked account, an unregistered number), " +
        "in its answer to a send or by webhook (a message reported `failed` with an account-level code). " +
        "Sends are still accepted and wait in order; the number tries one message again at growing intervals and resumes by itself, " +
        "or at once when its credentials are reconnected.",
    }),
    pausedSince: z.string().datetime().nullable(),
    nextAttemptAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({
        description:
          "When a paused number next tries one message; after a webhook pause whose trial message the operator accepted, " +
          "when it resumes unless the operator reports another account-level failure first.",
      }),
    reason: z
      .object({
        code: z.string(),
        message: z.string(),
        upstreamCode: z.string().nullable(),
        reportedBy: z.enum(["answer", "webhook"]).openapi({
          description:
            "`answer`: the operator refused one of the number's sends. `webhook`: it reported a message `failed` (or sent the number's `errors`) with an account-level code.",
        }),
      })
      .nullable()
      .openapi({
        description:
          "Why the number is paused: the normalized code, our explanation, the operator's code, and how the operator said it.",
      }),
  })
  .openapi("NumberSending");

export const ChannelNumberDetail = ChannelNumber.extend({
  sending: NumberSending.openapi({
    description: "Whether the number's messages are leaving; only on `GET /channel-numbers/{id}`.",
  }),
  health: NumberHealth.openapi({
    description:
      "Extension: the number's state, what the operator last said about it (asked at most hourly) and today's sends.",
  }),
}).openapi("ChannelNumberDetail");

/** The number's sending state as the channel-number object reports it. */
export function toNumberSending(state: NumberSendingState): z.infer<typeof NumberSending> {
  const p = state.paused;
  return p
    ? {
        state: "paused",
        pausedSince: p.since,
        nextAttemptAt: p.nextAttemptAt,
        reason: { code: p.code, message: p.message, upstreamCode: p.upstreamCode, reportedBy: p.reportedBy },
      }
    : { state: "active", pausedSince: null, nextAttemptAt: null, reason: null };
}
