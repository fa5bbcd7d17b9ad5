import { env } from "cloudflare:workers";
import { call } from "./http";
import { hmacSha256, toHex } from "../../src/lib/crypto";

/** `X-Hub-Signature-256` as the operator computes it: HMAC-SHA256 of the raw body bytes with the app secret. */
export const operatorSignature = async (raw: string | Uint8Array, secret = env.UPSTREAM_APP_SECRET) =>
  `sha256=${toHex(await hmacSha256(secret, raw))}`;

/** POSTs an operator webhook, signed over its exact bytes unless told otherwise. */
export async function postOperator(
  payload: unknown,
  opts: { signature?: string | null; raw?: string } = {},
): Promise<Response> {
  const raw = opts.raw ?? JSON.stringify(payload);
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  const signature = opts.signature === undefined ? await operatorSignature(raw) : opts.signature;
  if (signature !== null) headers["X-Hub-Signature-256"] = signature;
  return call("/upstream/cloud/webhook", { method: "POST", headers, body: raw });
}

const change = (phoneNumberId: string, value: Record<string, unknown>) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: "WABA",
      changes: [
        {
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15557770000", phone_number_id: phoneNumberId },
            ...value,
          },
        },
      ],
    },
  ],
});

/** A status webhook shaped like the operator's documented examples. */
export const statusPayload = (phoneNumberId: string, statuses: Record<string, unknown>[]) =>
  change(phoneNumberId, { statuses });

/** An inbound-message webhook shaped like the operator's documented examples. */
export const inboundPayload = (
  phoneNumberId: string,
  messages: Record<string, unknown>[],
  contacts: Record<string, unknown>[] = [{ wa_id: "5511912345678" }],
) => change(phoneNumberId, { contacts, messages });

/** The operator's timestamps: unix seconds as strings. */
export const seconds = (ms: number) => String(Math.floor(ms / 1000));

/** A business-account webhook (`entry.id` is the WABA id) with one change of `field`, as the operator documents them. */
export const accountFieldPayload = (wabaId: string, field: string, value: unknown) => ({
  object: "whatsapp_business_account",
  entry: [{ id: wabaId, time: 1_700_000_000, changes: [{ field, value }] }],
});

/** `phone_number_quality_update`: the number is named by its display number only. */
export const qualityUpdatePayload = (
  wabaId: string,
  value: { display_phone_number: unknown; event?: string; current_limit?: string } & Record<string, unknown>,
) => accountFieldPayload(wabaId, "phone_number_quality_update", value);

/** `account_update` (e.g. DISABLED_UPDATE with ban_info, ACCOUNT_RESTRICTION with restriction_info). */
export const accountUpdatePayload = (wabaId: string, value: { event: string } & Record<string, unknown>) =>
  accountFieldPayload(wabaId, "account_update", value);

/** Several payloads' entries in one POST (the operator batches entries of different fields). */
export const combined = (...payloads: { entry: unknown[] }[]) => ({
  object: "whatsapp_business_account",
  entry: payloads.flatMap((p) => p.entry),
});
