import type { ChannelNumberRow } from "../db/channel-numbers";
import { open } from "../lib/secret-box";
import type { UpstreamAdapter } from "./adapter";
import { CloudApiAdapter } from "./cloud-api";
import { SandboxAdapter } from "./sandbox";

/** Builds a number's adapter; credentials are decrypted here, at call time, and kept nowhere. */
export async function adapterFor(env: Env, row: ChannelNumberRow): Promise<UpstreamAdapter> {
  if (row.upstream_type === "sandbox") return new SandboxAdapter();
  if (!row.upstream_credentials || !row.upstream_phone_number_id) throw new Error("cloud number without credentials");
  const { accessToken } = JSON.parse(await open(env.CREDENTIALS_ENCRYPTION_KEY, row.upstream_credentials)) as { accessToken: string };
  return new CloudApiAdapter({
    baseUrl: env.UPSTREAM_CLOUD_API_BASE_URL,
    version: env.UPSTREAM_CLOUD_API_VERSION,
    phoneNumberId: row.upstream_phone_number_id,
    accessToken,
    messagingProduct: env.UPSTREAM_MESSAGING_PRODUCT,
    timeoutMs: Number(env.UPSTREAM_TIMEOUT_MS) || 15_000,
  });
}
