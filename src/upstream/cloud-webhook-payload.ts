import { z } from "zod";

// The operator's webhook payload, as far as we read it. Unknown fields pass
// through: the operator adds fields over time and must never be refused for it.
const StatusError = z.looseObject({ code: z.union([z.number(), z.string()]).optional(), title: z.string().optional(), message: z.string().optional() });

export const CloudStatus = z.looseObject({
  id: z.string(),
  status: z.string(),
  timestamp: z.string().optional(),
  recipient_id: z.string().optional(),
  biz_opaque_callback_data: z.string().optional(),
  errors: z.array(StatusError).optional(),
});

export const CloudInbound = z.looseObject({
  id: z.string(),
  from: z.string(),
  timestamp: z.string().optional(),
  type: z.string(),
  text: z.looseObject({ body: z.string() }).optional(),
});

export const CloudWebhookPayload = z.looseObject({
  object: z.string().optional(),
  entry: z.array(
    z.looseObject({
      changes: z.array(
        z.looseObject({
          field: z.string().optional(),
          value: z.looseObject({
            metadata: z.looseObject({ phone_number_id: z.string() }).optional(),
            statuses: z.array(CloudStatus).optional(),
            messages: z.array(CloudInbound).optional(),
          }),
        }),
      ),
    }),
  ),
});

export type CloudWebhookPayload = z.infer<typeof CloudWebhookPayload>;

/** The operator's timestamps are unix seconds as strings. */
export const operatorTime = (ts: string | undefined, fallback: number): number => {
  const seconds = Number(ts);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallback;
};
