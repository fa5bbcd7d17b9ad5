import { DurableObject } from "cloudflare:workers";
import { now } from "../lib/clock";
import { decide, type BucketDecision } from "../lib/gcra";
import type { BucketSpec, ThrottleDecision } from "../lib/throttle-client";

// Rows are deleted this long after their bucket is full, so that a busy scope re-arms its alarm at most once a minute.
const CLEANUP_SLACK_MS = 60_000;

export type { BucketSpec, ThrottleDecision };

/**
 * Exact rate limits for one scope (an API key, a webhook's workspace, a client
 * address, a sign-in email …): the object named by the scope holds one row per
 * bucket. `take` is all-or-nothing across the buckets given, and runs without an
 * await between read and write, so concurrent requests cannot both take the
 * last token.
 *
 * Bound: one row per bucket name used in the scope (a few dozen at most: one per
 * webhook of a workspace), about 60 bytes each. An alarm at the moment every
 * bucket is full again deletes the rows, so idle scopes (every client address
 * that ever failed to authenticate) keep nothing.
 */
export class ThrottleDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** False once the cleanup alarm deleted the storage: the instance may stay in memory and serve the scope again. */
  private hasTable = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    void ctx.blockConcurrencyWhile(async () => this.ensureTable());
  }

  private ensureTable(): void {
    if (this.hasTable) return;
    // ~60 bytes a row; rows per object: the bucket names of the scope; purged by alarm().
    this.sql.exec("CREATE TABLE IF NOT EXISTS buckets (name TEXT PRIMARY KEY, tat REAL NOT NULL)");
    this.hasTable = true;
  }

  /** Takes `cost` tokens from every bucket, or from none if any of them refuses. */
  async take(buckets: BucketSpec[], cost = 1): Promise<ThrottleDecision> {
    this.ensureTable();
    const at = now();
    const decisions = buckets.map((b) => ({ name: b.name, d: decide(b, this.stateOf(b.name), at, cost) }));
    const refused = decisions.filter((x) => !x.d.allowed);
    if (refused.length > 0) return summarize(refused, "refused");
    for (const { name, d } of decisions) {
      this.sql.exec(
        "INSERT INTO buckets (name, tat) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET tat = excluded.tat",
        name,
        d.nextTat,
      );
    }
    await this.armCleanup(Math.max(...decisions.map((x) => x.d.nextTat)));
    return summarize(decisions, "admitted");
  }

  /** What `take` would answer now, without taking anything. */
  async peek(buckets: BucketSpec[], cost = 1): Promise<ThrottleDecision> {
    this.ensureTable();
    const at = now();
    const decisions = buckets.map((b) => ({ name: b.name, d: decide(b, this.stateOf(b.name), at, cost) }));
    const refused = decisions.filter((x) => !x.d.allowed);
    return refused.length > 0 ? summarize(refused, "refused") : summarize(decisions, "admitted");
  }

  override async alarm(): Promise<void> {
    this.ensureTable();
    this.sql.exec("DELETE FROM buckets WHERE tat <= ?", now());
    const next = this.sql.exec<{ tat: number | null }>("SELECT MAX(tat) AS tat FROM buckets").one().tat;
    if (next === null) {
      await this.ctx.storage.deleteAll();
      // That dropped the table as well; the next request re-creates it (idle scopes keep nothing).
      this.hasTable = false;
    } else await this.ctx.storage.setAlarm(next);
  }

  private stateOf(name: string): { tat: number } | null {
    return this.sql.exec<{ tat: number }>("SELECT tat FROM buckets WHERE name = ?", name).toArray()[0] ?? null;
  }

  /** One alarm per object, at (or after) the time every bucket is full again. */
  private async armCleanup(fullAt: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current < fullAt) await this.ctx.storage.setAlarm(fullAt + CLEANUP_SLACK_MS);
  }
}

function summarize(decisions: { name: string; d: BucketDecision }[], kind: "refused" | "admitted"): ThrottleDecision {
  // Refused: the bucket that frees last governs Retry-After. Admitted: the one closest to refusing.
  const pick = decisions.reduce((a, b) =>
    kind === "refused" ? (b.d.retryAfterMs > a.d.retryAfterMs ? b : a) : b.d.remaining < a.d.remaining ? b : a,
  );
  const { d } = pick;
  return {
    allowed: d.allowed,
    bucket: pick.name,
    limit: d.limit,
    remaining: d.remaining,
    resetMs: d.resetMs,
    retryAfterMs: d.retryAfterMs,
  };
}
