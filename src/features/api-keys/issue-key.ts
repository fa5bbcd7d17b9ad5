import { generateApiKey, hashApiKey } from "../../domain/api-keys";
import { spendWorkspaceHourly, type RateLimited } from "../../domain/limit-check";
import { hasRole, type KeyRole, type Role } from "../../lib/roles";
import { isoNow } from "../../lib/clock";
import { insertApiKey, type ApiKeyRow } from "./store";

/**
 * Creates a key for the workspace with `role`; the full key is returned here
 * only (its SHA-256 is stored). `maker` is the role of whoever asks (a
 * member's; the admin API counts as an owner): a key never gets
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
