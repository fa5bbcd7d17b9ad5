import { config, type ConfigVars } from "../config";
import { insertApiKey, revokeKey, type ApiKeyRow } from "../db/api-keys";
import { isoNow } from "../lib/clock";
import { randomBytes, sha256Hex, toBase64Url } from "../lib/crypto";
import { findByUuid } from "./job-id";
import { forgetKey } from "./key-cache";
import { spendWorkspaceHourly, type RateLimited } from "./limit-check";
import { hasRole, type KeyRole, type Role } from "./roles";

// 32 random bytes in base64url are 43 characters.
const SECRET_PART = /^[A-Za-z0-9_-]{43}$/;

export const keyPrefix = (env: ConfigVars): string => `${config(env).apiKeyPrefix}live_`;

export function generateApiKey(env: ConfigVars): string {
  return `${keyPrefix(env)}${toBase64Url(randomBytes(32))}`;
}

/** True when `key` has our shape; anything else is refused before it is hashed or looked up. */
export function isWellFormedKey(env: ConfigVars, key: string): boolean {
  const prefix = keyPrefix(env);
  return key.startsWith(prefix) && SECRET_PART.test(key.slice(prefix.length));
}

/** How a key is named in the audit log and lists: its name and last four characters, never the key. */
export const keyLabel = (row: Pick<ApiKeyRow, "name" | "last_four">): string =>
  `"${row.name ?? "(unnamed)"}" (…${row.last_four})`;

/** The audit entry of a new key: its label and its role, the one thing about it that never changes. */
export const keyCreatedDetail = (row: Pick<ApiKeyRow, "name" | "last_four" | "role">): string =>
  `${keyLabel(row)}, role ${row.role}`;

export const hashApiKey = (key: string): Promise<string> => sha256Hex(key);

/**
 * Creates a key for the workspace with `role`; the full key is returned here
 * only (its SHA-256 is stored). `maker` is the role of whoever asks (a
 * member's; the operator's admin API counts as an owner): a key never gets
 * more than its maker has, so making a key is no way around a role. Limited
 * per workspace, whoever asks: keys are revoked, never deleted, so each one is
 * a row for good.
 */
export async function issueApiKey(
  env: Env,
  workspaceId: string,
  request: { name: string | null; role: KeyRole; maker: Role },
): Promise<{ ok: true; row: ApiKeyRow; key: string } | { ok: false; problem: "role_above_maker" } | RateLimited> {
  const { name, role, maker } = request;
  if (!hasRole(maker, role)) return { ok: false, problem: "role_above_maker" };
  const spent = await spendWorkspaceHourly(env, workspaceId, "apiKeyCreate", "new API keys");
  if (!spent.ok) return spent;
  const key = generateApiKey(env);
  const row: ApiKeyRow = {
    id: crypto.randomUUID(),
    workspace_id: workspaceId,
    name,
    key_hash: await hashApiKey(key),
    last_four: key.slice(-4),
    role,
    created_at: isoNow(),
    revoked_at: null,
    last_used_at: null,
  };
  await insertApiKey(env.DB, row);
  return { ok: true, row, key };
}

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
