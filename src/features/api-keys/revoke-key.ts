import { findByUuid } from "../../lib/job-id";
import { forgetKey } from "../../domain/key-cache";
import { isoNow } from "../../lib/clock";
import { revokeKey } from "./store";

/**
 * Revokes a key (scoped to `workspaceId` when given); returns the key's
 * workspace, or null if there is no such key. This isolate forgets it at
 * once, the others within the key cache's TTL (5 s).
 */
export async function revokeApiKey(
  db: D1Database,
  keyId: string,
  workspaceId: string | null = null,
): Promise<string | null> {
  const revoked = await findByUuid(keyId, (stored) => revokeKey(db, stored, isoNow(), workspaceId));
  if (!revoked) return null;
  forgetKey(revoked.key_hash);
  return revoked.workspace_id;
}
