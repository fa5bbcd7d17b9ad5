// The operator's webhook as the local scripts post it (soak, latency bench): one number's `messages` change,
// signed as the operator signs it (X-Hub-Signature-256 over the raw body with the app secret).
import { createHmac } from "node:crypto";

/**
 * @param {string} accountId the business account's id in the envelope
 * @param {string} phoneNumberId
 * @param {Record<string, unknown>} value the change's value beside its product and metadata
 */
export const operatorEnvelope = (accountId, phoneNumberId, value) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: accountId,
      changes: [
        {
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550100000", phone_number_id: phoneNumberId },
            ...value,
          },
        },
      ],
    },
  ],
});

/** The X-Hub-Signature-256 header of `raw`. @param {string} appSecret @param {string} raw */
export const operatorSignature = (appSecret, raw) =>
  `sha256=${createHmac("sha256", appSecret).update(raw).digest("hex")}`;
