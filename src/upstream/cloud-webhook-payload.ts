import { z } from "zod";

// The operator's webhook payload, as far as we read it. Unknown fields pass
// through: the operator adds fields over time and must never be refused for it.
// The envelope is read loosely and each status or message is validated on its
// own, so that one malformed item never drops its siblings.

const Envelope = z.looseObject({
  entry: z.array(
    z.looseObject({
      changes: z.array(
        z.looseObject({
          value: z.looseObject({
            metadata: z.looseObject({ phone_number_id: z.string() }).optional(),
            statuses: z.array(z.unknown()).optional(),
            messages: z.array(z.unknown()).optional(),
            contacts: z.array(z.unknown()).optional(),
          }),
        }),
      ),
    }),
  ),
});

const StatusError = z.looseObject({
  code: z.union([z.number(), z.string()]).optional(),
  title: z.string().optional(),
  message: z.string().optional(),
  error_data: z.looseObject({ details: z.string().optional() }).optional(),
});

export const CloudStatus = z.looseObject({
  id: z.string().min(1),
  status: z.string(),
  timestamp: z.string().optional(),
  recipient_id: z.string().optional(),
  biz_opaque_callback_data: z.string().optional(),
  errors: z.array(StatusError).optional(),
});
export type CloudStatus = z.infer<typeof CloudStatus>;

/** An inbound message. `from` (the phone number) is withheld for users with a username: `from_user_id` identifies them then. */
export const CloudInbound = z
  .looseObject({
    id: z.string().min(1),
    from: z.string().optional(),
    from_user_id: z.string().optional(),
    timestamp: z.string().optional(),
    type: z.string(),
    text: z.looseObject({ body: z.string() }).optional(),
  })
  .refine((m) => m.from !== undefined || m.from_user_id !== undefined, { message: "message without a sender" });
export type CloudInbound = z.infer<typeof CloudInbound>;

/** One unit of work from an operator payload, queued on its own (a queue message holds at most 128 KB). */
export type UpstreamItem =
  | { kind: "status"; phoneNumberId: string; status: unknown }
  | { kind: "message"; phoneNumberId: string; message: unknown };

/** Splits a verified payload into its statuses and messages; null when it is not an operator payload at all. */
export function splitPayload(raw: unknown): UpstreamItem[] | null {
  const parsed = Envelope.safeParse(raw);
  if (!parsed.success) return null;
  const items: UpstreamItem[] = [];
  for (const entry of parsed.data.entry) {
    for (const change of entry.changes) {
      const phoneNumberId = change.value.metadata?.phone_number_id;
      if (!phoneNumberId) continue;
      for (const status of change.value.statuses ?? []) items.push({ kind: "status", phoneNumberId, status });
      for (const message of change.value.messages ?? []) items.push({ kind: "message", phoneNumberId, message });
    }
  }
  return items;
}

/** The operator's timestamps are unix seconds as strings. */
export const operatorTime = (ts: string | undefined, fallback: number): number => {
  const seconds = Number(ts);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallback;
};
