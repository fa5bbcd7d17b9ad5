import { config } from "../config";
import type { ChannelNumberRow } from "../db/channel-numbers";
import { openUpstreamCredentials } from "../lib/sealed-secrets";
import type { UpstreamAdapter } from "./adapter";
import { CloudApiAdapter } from "./cloud-api";
import { SandboxAdapter } from "./sandbox";

/** Builds a number's adapter; credentials are decrypted here, at call time, and kept nowhere. */
export async function adapterFor(env: Env, row: ChannelNumberRow): Promise<UpstreamAdapter> {
  if (row.upstream_type === "sandbox") return new SandboxAdapter();
  if (!row.upstream_credentials || !row.upstream_phone_number_id) throw new Error("cloud number without credentials");
  const { accessToken } = await openUpstreamCredentials(env, row);
  const { baseUrl, version, messagingProduct, timeoutMs, stampCalls } = config(env).upstream;
  return new CloudApiAdapter({ baseUrl, version, phoneNumberId: row.upstream_phone_number_id, accessToken, messagingProduct, timeoutMs, stampCalls });
}
