import { recordKeyUse } from "./store";
import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";

/**
 * "Last used" of API keys, coarse on purpose: a key's `last_used_at` is
 * written at most once per 10 minutes per isolate, and the UPDATE itself
 * changes nothing when another isolate wrote within the period, so a busy key
 * costs a handful of D1 writes an hour, never one per request.
 */
export const LAST_USED_RESOLUTION_MS = 10 * 60 * 1000;
const MAX_TRACKED = 10_000;

// keyId -> when this isolate last recorded (or attempted to record) a use.
const recorded = new Map<string, number>();

/** Called by the API-key middleware on every authenticated request; the write (if any) runs after the response. */
export function noteKeyUsed(env: Env, ctx: Pick<ExecutionContext, "waitUntil">, keyId: string): void {
  const at = now();
  const last = recorded.get(keyId);
  if (last !== undefined && at - last < LAST_USED_RESOLUTION_MS) return;
  if (recorded.size >= MAX_TRACKED) recorded.clear();
  recorded.set(keyId, at);
  const write = recordKeyUse(
    env.DB,
    keyId,
    new Date(at).toISOString(),
    new Date(at - LAST_USED_RESOLUTION_MS).toISOString(),
  ).catch((err) => {
    // Best effort: a lost "last used" never fails a request.
    recorded.delete(keyId);
    log("warn", "api key last-used write failed", { keyId, detail: errorText(err) });
  });
  ctx.waitUntil(write);
}
