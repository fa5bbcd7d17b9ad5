import { open, seal, type KeyRingEnv } from "./secret-box";

/** What a live number stores, sealed, in channel_numbers.upstream_credentials. */
export interface OperatorCredentials {
  accessToken: string;
}

/** Seals a number's operator credentials, bound to the number's row id. */
export const sealOperatorCredentials = (
  env: KeyRingEnv,
  numberId: string,
  credentials: OperatorCredentials,
): Promise<string> => seal(env, "upstream-credentials", numberId, JSON.stringify(credentials));

/** The columns of a number's row its sealed credentials are read from (a `channel_numbers` row fits). */
export interface SealedCredentialsRow {
  id: string;
  upstream_credentials: string | null;
}

/** Opens the operator credentials of a live number's row (throws if it has none or they do not open). */
export async function openOperatorCredentials(
  env: KeyRingEnv,
  row: SealedCredentialsRow,
): Promise<OperatorCredentials> {
  if (!row.upstream_credentials) throw new Error("live number without credentials");
  const parsed: unknown = JSON.parse(await open(env, "upstream-credentials", row.id, row.upstream_credentials));
  if (
    typeof parsed !== "object" ||
    parsed === null ||
    !("accessToken" in parsed) ||
    typeof parsed.accessToken !== "string"
  ) {
    throw new Error("sealed operator credentials without an access token");
  }
  return { accessToken: parsed.accessToken };
}

/** Seals a webhook's signing secret, bound to the webhook's row id. */
export const sealWebhookSecret = (env: KeyRingEnv, webhookId: string, secret: string): Promise<string> =>
  seal(env, "webhook-secret", webhookId, secret);

export const openWebhookSecret = (env: KeyRingEnv, webhook: { id: string; sealed_secret: string }): Promise<string> =>
  open(env, "webhook-secret", webhook.id, webhook.sealed_secret);
