import { eventIdOf } from "../../domain/events";
import type { DeliveryReport } from "./contract";
import { changesOf } from "./message-events";
import type { MessageRow } from "./record";

/**
 * The delivery log: what the webhook consumer did with each event (GET /webhooks/{id}/deliveries,
 * GET /messages/{id}/events, the dashboard). One row per number per report the consumer makes (a
 * consumer invocation reports dozens of events at once), not one per attempt: rows written are
 * billed, and a healthy webhook's log is one row per batch of deliveries.
 *
 * Key (channel_number_id, seq): a number's log in time order (`seq` is the report's time in ms, or
 * one past the number's last). Each row holds up to ATTEMPTS_PER_ROW attempts (JSON); an attempt's
 * own key, for ids and cursors, is `seq * ATTEMPTS_PER_ROW + index`.
 *
 * Bound: ~150 B per attempt (~50 attempts a row when busy, one a row when quiet); kept 3 days (1 hour
 * under storage pressure), purged oldest first, 500 rows a run.
 */
export const ATTEMPTS_PER_ROW = 512;
export const KEEP_DELIVERIES_MS = 3 * 24 * 60 * 60 * 1000;
export const KEEP_DELIVERIES_UNDER_PRESSURE_MS = 60 * 60 * 1000;
const PURGE_ROWS = 500;
/** Rows one listing or one look for a message's attempts may read. */
const READ_BUDGET = 200;
/** Numbers one purge looks at (a workspace has at most its plan's numbers; replaced numbers age out). */
const MAX_LOGGED_NUMBERS = 1_000;

export function createDeliveriesTable(sql: SqlStorage): void {
  sql.exec(
    `CREATE TABLE IF NOT EXISTS deliveries (
      channel_number_id TEXT NOT NULL, seq INTEGER NOT NULL, attempts TEXT NOT NULL,
      PRIMARY KEY (channel_number_id, seq)) WITHOUT ROWID`,
  );
}

/** One attempt as stored in a row (short keys: a row holds many). */
interface Stored {
  e: string; // event id
  t: string; // event type
  s: string; // subject (message id, or the event id of a test event)
  w: string; // webhook id
  n: number; // attempt number
  a: number; // attempted at
  o: string; // outcome
  c: number | null; // status code
  l: number | null; // latency ms
  x: string | null; // error
  r: number | null; // next retry at
}

/** An attempt as the API and the dashboard render it (webhook-view.ts). */
export interface AttemptRow {
  seq: number;
  event_id: string;
  event_type: string | null;
  subject: string;
  webhook_id: string;
  attempt: number;
  attempted_at: number;
  outcome: string;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  next_retry_at: number | null;
  [key: string]: SqlStorageValue;
}

const toAttempt = (seq: number, s: Stored): AttemptRow => ({
  seq,
  event_id: s.e,
  event_type: s.t,
  subject: s.s,
  webhook_id: s.w,
  attempt: s.n,
  attempted_at: s.a,
  outcome: s.o,
  status_code: s.c,
  latency_ms: s.l,
  error: s.x,
  next_retry_at: s.r,
});

/** Deferred attempts (not tried: an earlier event of the endpoint failed) are kept for the retry chain but never listed. */
const LISTED = (s: Stored): boolean => s.o !== "deferred";

export class DeliveryLog {
  private readonly lastSeq = new Map<string, number>();
  private hasTable: boolean;

  constructor(private readonly sql: SqlStorage) {
    this.hasTable =
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'deliveries'").toArray().length > 0;
  }

  /** Logs the attempts of one consumer report: one row per number (per ATTEMPTS_PER_ROW attempts). */
  record(reports: readonly DeliveryReport[], at: number): void {
    const byNumber = new Map<string, Stored[]>();
    for (const r of reports) {
      if (r.webhookId === null || r.outcome === "no_webhook") continue;
      const list = byNumber.get(r.channelNumberId) ?? [];
      list.push({
        e: r.eventId,
        t: r.eventType,
        s: r.subject,
        w: r.webhookId,
        n: r.attempt,
        a: r.attemptedAt,
        o: r.outcome,
        c: r.statusCode,
        l: r.latencyMs,
        x: r.error,
        r: r.nextRetryAt,
      });
      byNumber.set(r.channelNumberId, list);
    }
    if (byNumber.size === 0) return;
    if (!this.hasTable) {
      createDeliveriesTable(this.sql);
      this.hasTable = true;
    }
    for (const [numberId, attempts] of byNumber) {
      for (let i = 0; i < attempts.length; i += ATTEMPTS_PER_ROW) {
        const seq = Math.max(at, this.last(numberId) + 1);
        this.sql.exec(
          "INSERT INTO deliveries (channel_number_id, seq, attempts) VALUES (?, ?, ?)",
          numberId,
          seq,
          JSON.stringify(attempts.slice(i, i + ATTEMPTS_PER_ROW)),
        );
        this.lastSeq.set(numberId, seq);
      }
    }
  }

  /** A webhook's attempts, newest first, before the attempt key `before`. */
  ofWebhook(channelNumberId: string, webhookId: string, before: number | null, limit: number): AttemptRow[] {
    if (!this.hasTable) return [];
    const out: AttemptRow[] = [];
    let rowBefore = before === null ? Number.MAX_SAFE_INTEGER : Math.floor(before / ATTEMPTS_PER_ROW) + 1;
    for (let budget = READ_BUDGET; budget > 0 && out.length < limit;) {
      const rows = this.rows(channelNumberId, "seq < ? ORDER BY seq DESC", [rowBefore], Math.min(20, budget));
      if (rows.length === 0) break;
      budget -= rows.length;
      for (const row of rows) {
        for (let i = row.attempts.length - 1; i >= 0; i--) {
          const key = row.seq * ATTEMPTS_PER_ROW + i;
          const s = row.attempts[i]!;
          if (s.w !== webhookId || !LISTED(s) || (before !== null && key >= before)) continue;
          out.push(toAttempt(key, s));
          if (out.length === limit) return out;
        }
        rowBefore = row.seq;
      }
    }
    return out;
  }

  /** The newest attempt of the webhook that did not deliver, among its latest rows. */
  lastFailure(channelNumberId: string, webhookId: string): AttemptRow | undefined {
    if (!this.hasTable) return undefined;
    for (const row of this.rows(channelNumberId, "1 ORDER BY seq DESC", [], READ_BUDGET)) {
      for (let i = row.attempts.length - 1; i >= 0; i--) {
        const s = row.attempts[i]!;
        if (s.w === webhookId && LISTED(s) && s.o !== "delivered") return toAttempt(row.seq * ATTEMPTS_PER_ROW + i, s);
      }
    }
    return undefined;
  }

  /**
   * The attempts to deliver a message's events, oldest first. Each event is looked for from the
   * time of its change (its first attempt comes after it) and, after a failed or deferred attempt,
   * from the time its retry was due: a few rows each, however busy the number.
   */
  aboutMessage(row: MessageRow): AttemptRow[] {
    if (!this.hasTable) return [];
    const found: AttemptRow[] = [];
    for (const change of changesOf(row)) {
      const eventId = eventIdOf(row.id, change.kind);
      let from = change.at;
      for (let hops = 0; hops < 12; hops++) {
        const hit = this.firstAttempt(row.channel_number_id, eventId, from);
        if (!hit) break;
        if (LISTED(hit.stored)) found.push(toAttempt(hit.key, hit.stored));
        if (hit.stored.o === "delivered" || hit.stored.o === "dead" || hit.stored.r === null) break;
        from = Math.max(hit.stored.r, hit.rowSeq + 1);
      }
    }
    return found.sort((a, b) => a.attempted_at - b.attempted_at || a.seq - b.seq);
  }

  /** When the oldest row leaves its window, or null. */
  nextExpiry(pressure: boolean): number | null {
    if (!this.hasTable) return null;
    let oldest: number | null = null;
    for (const n of this.numbers()) {
      const first = this.sql
        .exec<{ seq: number }>("SELECT seq FROM deliveries WHERE channel_number_id = ? ORDER BY seq LIMIT 1", n)
        .toArray()[0];
      if (first && (oldest === null || first.seq < oldest)) oldest = first.seq;
    }
    return oldest === null ? null : oldest + (pressure ? KEEP_DELIVERIES_UNDER_PRESSURE_MS : KEEP_DELIVERIES_MS);
  }

  /** Deletes rows past their window, oldest first, PURGE_ROWS in all. */
  purge(at: number, pressure: boolean): void {
    if (!this.hasTable) return;
    const before = at - (pressure ? KEEP_DELIVERIES_UNDER_PRESSURE_MS : KEEP_DELIVERIES_MS);
    let budget = PURGE_ROWS;
    for (const n of this.numbers()) {
      if (budget <= 0) break;
      budget -= this.sql.exec(
        `DELETE FROM deliveries WHERE channel_number_id = ? AND seq IN (
           SELECT seq FROM deliveries WHERE channel_number_id = ? AND seq < ? ORDER BY seq LIMIT ?)`,
        n,
        n,
        before,
        budget,
      ).rowsWritten;
    }
  }

  private firstAttempt(
    numberId: string,
    eventId: string,
    from: number,
  ): { key: number; rowSeq: number; stored: Stored } | null {
    // A row's seq is its report's time: at or after the attempts it holds.
    for (const row of this.rows(numberId, "seq >= ? ORDER BY seq", [from], READ_BUDGET)) {
      const i = row.attempts.findIndex((s) => s.e === eventId && s.a >= from - 1);
      if (i >= 0) return { key: row.seq * ATTEMPTS_PER_ROW + i, rowSeq: row.seq, stored: row.attempts[i]! };
    }
    return null;
  }

  private rows(
    numberId: string,
    where: string,
    bindings: SqlStorageValue[],
    limit: number,
  ): { seq: number; attempts: Stored[] }[] {
    return this.sql
      .exec<{ seq: number; attempts: string }>(
        `SELECT seq, attempts FROM deliveries WHERE channel_number_id = ? AND ${where} LIMIT ?`,
        numberId,
        ...bindings,
        limit,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, attempts: JSON.parse(r.attempts) as Stored[] }));
  }

  private last(numberId: string): number {
    let seq = this.lastSeq.get(numberId);
    if (seq === undefined) {
      seq =
        this.sql
          .exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM deliveries WHERE channel_number_id = ?", numberId)
          .one().seq ?? 0;
      this.lastSeq.set(numberId, seq);
    }
    return seq;
  }

  /** Numbers with a log, each found by one step of the key. */
  private numbers(): string[] {
    const ids: string[] = [];
    let last = "";
    while (ids.length < MAX_LOGGED_NUMBERS) {
      const next = this.sql
        .exec<{ n: string }>(
          "SELECT channel_number_id AS n FROM deliveries WHERE channel_number_id > ? ORDER BY channel_number_id LIMIT 1",
          last,
        )
        .toArray()[0];
      if (!next) break;
      ids.push(next.n);
      last = next.n;
    }
    return ids;
  }
}
