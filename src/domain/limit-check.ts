import { takeToken, type BucketSpec, type ThrottleDecision } from "../lib/throttle-client";
import { bucket, scopes, type AbuseLimit } from "./abuse-limits";

/** A domain operation refused by an abuse limit: nothing was done. `what` names the limit for the caller. */
export interface RateLimited {
  ok: false;
  problem: "rate_limited";
  decision: ThrottleDecision;
  what: string;
}

export type Spent = { ok: true; decision: ThrottleDecision } | RateLimited;

/**
 * Takes a token from the buckets of `scope` (all or none). Domain operations
 * call this themselves, so that every caller (the API, the dashboard) is held
 * to the same limit; each caller turns a refusal into its own answer.
 */
export async function spend(
  env: Pick<Env, "THROTTLE">,
  scope: string,
  buckets: BucketSpec[],
  what: string,
): Promise<Spent> {
  const decision = await takeToken(env, scope, buckets);
  return decision.allowed ? { ok: true, decision } : { ok: false, problem: "rate_limited", decision, what };
}

/**
 * Spends from one of a workspace's hourly budgets (`name`), whoever asks; `what` names the operations in a
 * refusal ("member changes: 60 per 1 h per workspace").
 */
export function spendWorkspaceHourly(
  env: Pick<Env, "THROTTLE">,
  workspaceId: string,
  name: AbuseLimit,
  what: string,
): Promise<Spent> {
  const perWorkspace = bucket(name);
  return spend(
    env,
    scopes.workspace(workspaceId),
    [perWorkspace],
    `${what}: ${perWorkspace.limit} per ${perWorkspace.periodSeconds / 3600} h per workspace`,
  );
}

export function isRateLimited(outcome: unknown): outcome is RateLimited {
  return typeof outcome === "object" && outcome !== null && "problem" in outcome && outcome.problem === "rate_limited";
}
