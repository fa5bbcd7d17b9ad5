import { hmacSha256 } from "../lib/crypto";

/**
 * The jobId of a send is a keyed hash of (workspace, Idempotency-Key, generation),
 * so that every retry of one send, whatever step it failed at, addresses the same
 * outbox entry and the same D1 copy. `generation` only grows when a key is reused
 * after its binding expired and the old jobId is still taken.
 */
export async function deriveJobId(secret: string, workspaceId: string, key: string, generation = 0): Promise<string> {
  const mac = new Uint8Array(await hmacSha256(secret, `${workspaceId}\n${generation}\n${key}`));
  const b = mac.slice(0, 16);
  // Shape it as an RFC 9562 version-8 (custom) UUID.
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
