import { config } from "../../config";

/**
 * Local soak runs only (DEV_OBJECT_RESTARTS, `npm run soak`): the object ends itself, as a deploy
 * or an eviction ends it: what it held in memory is gone, the call that asked fails, and the next
 * call starts a new instance on the same storage, while the Worker and its queues stay up.
 * Refused unless the var says so (production's wrangler.toml says "false").
 */
export function restartObject(ctx: DurableObjectState, env: Env): void {
  if (!config(env).dev.objectRestarts) throw new Error("object restarts are off (DEV_OBJECT_RESTARTS)");
  ctx.abort("restarted on purpose (DEV_OBJECT_RESTARTS)");
}
