import type { Context } from "hono";
import type { AppEnv } from "../context";
import type { Caller } from "../domain/actor";

/** The API key's workspace and the key as the actor: what the shared domain operations take. */
export const apiCaller = (c: Context<AppEnv>): Caller => {
  const { workspaceId, keyId } = c.get("principal");
  return { workspaceId, actor: { type: "api_key", id: keyId } };
};
