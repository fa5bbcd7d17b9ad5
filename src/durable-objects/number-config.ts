import { getNumberById, type ChannelNumberRow } from "../db/channel-numbers";
import { now } from "../lib/clock";
import { openUpstreamCredentials } from "../lib/sealed-secrets";
import type { UpstreamAdapter } from "../upstream/adapter";
import { CloudApiAdapter } from "../upstream/cloud-api";
import { SandboxAdapter } from "../upstream/sandbox";

// A disconnect is also pushed to the object at once; the TTL bounds the lag otherwise.
const NUMBER_TTL_MS = 30_000;

export interface CachedNumber {
  row: ChannelNumberRow | null;
  loadedAt: number;
}

export async function loadNumber(db: D1Database, id: string, cached: CachedNumber | null): Promise<CachedNumber> {
  if (cached && now() - cached.loadedAt < NUMBER_TTL_MS) return cached;
  return { row: await getNumberById(db, id), loadedAt: now() };
}

/** Builds the number's adapter; credentials are decrypted here, at call time, and kept nowhere. */
export async function adapterFor(env: Env, row: ChannelNumberRow): Promise<UpstreamAdapter> {
  if (row.upstream_type === "sandbox") return new SandboxAdapter();
  if (!row.upstream_credentials || !row.upstream_phone_number_id) throw new Error("cloud number without credentials");
  const { accessToken } = await openUpstreamCredentials(env, row);
  return new CloudApiAdapter({
    baseUrl: env.UPSTREAM_CLOUD_API_BASE_URL,
    version: env.UPSTREAM_CLOUD_API_VERSION,
    phoneNumberId: row.upstream_phone_number_id,
    accessToken,
    messagingProduct: env.UPSTREAM_MESSAGING_PRODUCT,
    timeoutMs: Number(env.UPSTREAM_TIMEOUT_MS) || 15_000,
  });
}
