import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { findActiveKeyByHash } from "../db/api-keys";
import { hashApiKey, isWellFormedKey } from "../domain/api-keys";
import { cachedPrincipal, rememberPrincipal } from "../domain/key-cache";
import { noteKeyUsed } from "../domain/api-key-last-used";
import { ApiError } from "../lib/errors";
import { timingSafeEqualStrings } from "../lib/crypto";

const MAX_AUTH_HEADER_LENGTH = 512;

const unauthorized = () =>
  new ApiError("unauthorized", "Missing or invalid API key. Send Authorization: Bearer <API key>.");

/** `Authorization: Bearer <prefix>live_…` on every /api/v1 endpoint. */
export const apiKeyAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization");
  if (!header || header.length > MAX_AUTH_HEADER_LENGTH) throw unauthorized();
  const match = /^Bearer ([^\s]+)$/.exec(header);
  const key = match?.[1];
  if (!key || !isWellFormedKey(c.env, key)) throw unauthorized();

  const keyHash = await hashApiKey(key);
  let principal = cachedPrincipal(keyHash);
  if (principal === undefined) {
    const row = await findActiveKeyByHash(c.env.DB, keyHash);
    // The lookup is by hash; the explicit comparison keeps the final decision constant-time.
    principal =
      row && (await timingSafeEqualStrings(row.key_hash, keyHash))
        ? { workspaceId: row.workspace_id, keyId: row.id }
        : null;
    rememberPrincipal(keyHash, principal);
  }
  if (!principal) throw unauthorized();
  c.set("principal", principal);
  noteKeyUsed(c.env, c.executionCtx, principal.keyId);
  await next();
});
