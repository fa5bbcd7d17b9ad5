import { eventIdOf, parseEventId } from "../../messages/events";
import type { DeliveryReport } from "./contract";
import { changesOf } from "./message-events";
import type { MessageRow } from "../../messages/record";
import type { AttemptRow } from "../../domain/webhook-view";

/**
 * The delivery log: what the webhook consumer did with each event (GET /webhooks/{id}/deliveries,
 * GET /messages/{id}/events, the dashboard). One row per number per report the consumer makes (a
 * consumer invocation reports dozens of events at once), not one per attempt: rows written are
 * billed, and a healthy webhook's log is one row per batch of deliveries.
 *
 * One table per UTC day of the reports (`d_<day>`), dropped whole once the day is past the log's
 * 3 days (a `DROP TABLE` writes no row). Key (channel_number_id, seq): a number's log in time order
 * (`seq` is the report's time in ms, or one past the number's last). Each row holds up to
 * ATTEMPTS_PER_ROW attempts (JSON); an attempt's own key, for ids and cursors, is
 * `seq * ATTEMPTS_PER_ROW + index`.
 *
 * Bound: ~300 B per attempt with its row's share (`Packed` JSON ~110 B; 295–299 measured by `npm run
 * bench` at 2.6–2.9 attempts a row; ~50 a row when busy), at most 4 days' tables (2 over the size guard).
 */
export const ATTEMPTS_PER_ROW = 512;
export const KEEP_DELIVERIES_MS = 3 * 24 * 60 * 60 * 1000;
/**
 * How long the log is kept by an object over its size guard (history-tiering.ts): at full rate a
 * day of the log is ~0.6 GB, and 3 days of it with a day's records would pass the storage budget.
 */
export const KEEP_DELIVERIES_UNDER_PRESSURE_MS = 24 * 60 * 60 * 1000;
/** Rows one listing or one look for a message's attempts may read. */
const READ_BUDGET = 200;
const DAY = 86_400_000;
const tableOf = (day: number): string => `d_${day}`;

export function createDeliveriesTable(sql: SqlStorage, day: number): void {
  sql.exec(
    `CREATE TABLE IF NOT EXISTS ${tableOf(day)} (
      channel_number_id TEXT NOT NULL, seq INTEGER NOT NULL, attempts TEXT NOT NULL,
      PRIMARY KEY (channel_number_id, seq)) WITHOUT ROWID`,
  );
}

/** One attempt, read back whole. */
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

/**
 * One attempt as a row holds it (~110 B in JSON where the whole would be ~235): short keys, no
 * null, and no type or subject where the event's id says them (every event the workspace makes; an
 * event whose id names neither keeps them).
 */
type Packed = Pick<Stored, "e" | "w" | "n" | "a" | "o"> & Partial<Stored>;

const derived = (eventId: string): { t: string; s: string } | null => {
  const named = parseEventId(eventId);
  if (!named) return null;
  if ("test" in named) return { t: "webhook.test", s: eventId };
  return { t: named.kind === "received" ? "message.received" : "message.status", s: named.messageId };
};

function pack(x: Stored): Packed {
  const p: Packed = { e: x.e, w: x.w, n: x.n, a: x.a, o: x.o };
  const d = derived(x.e);
  if (!d || d.t !== x.t || d.s !== x.s) Object.assign(p, { t: x.t, s: x.s });
  if (x.c !== null) p.c = x.c;
  if (x.l !== null) p.l = x.l;
  if (x.x !== null) p.x = x.x;
  if (x.r !== null) p.r = x.r;
  return p;
}

function unpack(p: Packed): Stored {
  const d = p.t !== undefined && p.s !== undefined ? { t: p.t, s: p.s } : derived(p.e);
  return {
    e: p.e,
    t: d?.t ?? "",
    s: d?.s ?? p.e,
    w: p.w,
    n: p.n,
    a: p.a,
    o: p.o,
    c: p.c ?? null,
    l: p.l ?? null,
    x: p.x ?? null,
    r: p.r ?? null,
  };
}

export type { AttemptRow };

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

/** Deferred attempts (not tried: an earlier event of the endpoint failed) are not logged; rows of an earlier build may hold some. */
const LISTED = (s: Stored): boolean => s.o !== "deferred";

export class DeliveryLog {
  private readonly lastSeq = new Map<string, number>();
  /** The days with a table, ascending. */
  private days: number[];

  constructor(private readonly sql: SqlStorage) {
    this.days = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'd\\_%' ESCAPE '\\'")
      .toArray()
      .map((r) => Number(r.name.slice(2)))
      .filter((d) => Number.isInteger(d))
      .sort((a, b) => a - b);
  }

  /** Logs the attempts of one consumer report: one row per number (per ATTEMPTS_PER_ROW attempts). */
  record(reports: readonly DeliveryReport[], at: number): void {
    const byNumber = new Map<string, Stored[]>();
    for (const r of reports) {
      // A deferred event was not tried (an earlier one of its endpoint failed): nothing to list, and
      // its next attempt is found from the failed one's retry time. With a failing endpoint these
      // would be nearly every entry (a pack of 50 logs 1 failure and 49 deferrals per retry).
      if (r.webhookId === null || r.outcome === "no_webhook" || r.outcome === "deferred") continue;
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
    for (const [numberId, attempts] of byNumber) {
      for (let i = 0; i < attempts.length; i += ATTEMPTS_PER_ROW) {
        const seq = Math.max(at, this.last(numberId) + 1);
        const day = Math.floor(seq / DAY);
        if (!this.days.includes(day)) {
          createDeliveriesTable(this.sql, day);
          this.days = [...this.days, day].sort((a, b) => a - b);
        }
        this.sql.exec(
          `INSERT INTO ${tableOf(day)} (channel_number_id, seq, attempts) VALUES (?, ?, ?)`,
          numberId,
          seq,
          JSON.stringify(attempts.slice(i, i + ATTEMPTS_PER_ROW).map(pack)),
        );
        this.lastSeq.set(numberId, seq);
      }
    }
  }

  /** A webhook's attempts, newest first, before the attempt key `before`. */
  ofWebhook(channelNumberId: string, webhookId: string, before: number | null, limit: number): AttemptRow[] {
    const out: AttemptRow[] = [];
    let rowBefore = before === null ? Number.MAX_SAFE_INTEGER : Math.floor(before / ATTEMPTS_PER_ROW) + 1;
    let budget = READ_BUDGET;
    for (const day of [...this.days].reverse()) {
      if (day * DAY >= rowBefore) continue;
      for (;;) {
        if (budget <= 0 || out.length >= limit) return out;
        const rows = this.rows(day, channelNumberId, "seq < ? ORDER BY seq DESC", [rowBefore], Math.min(20, budget));
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
    }
    return out;
  }

  /** The newest attempt of the webhook that did not deliver, among its latest rows. */
  lastFailure(channelNumberId: string, webhookId: string): AttemptRow | undefined {
    let budget = READ_BUDGET;
    for (const day of [...this.days].reverse()) {
      for (const row of this.rows(day, channelNumberId, "1 ORDER BY seq DESC", [], budget)) {
        budget--;
        for (let i = row.attempts.length - 1; i >= 0; i--) {
          const s = row.attempts[i]!;
          if (s.w === webhookId && LISTED(s) && s.o !== "delivered")
            return toAttempt(row.seq * ATTEMPTS_PER_ROW + i, s);
        }
      }
      if (budget <= 0) break;
    }
    return undefined;
  }

  /**
   * The attempts to deliver a message's events, oldest first. Each event is looked for from the
   * time of its change (its first attempt comes after it) and, after a failed attempt,
   * from the time its retry was due: a few rows each, however busy the number.
   */
  aboutMessage(row: MessageRow): AttemptRow[] {
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

  /** When the oldest day's table is past the log's window (`keepMs` after the day ends), or null. */
  nextExpiry(keepMs: number): number | null {
    const oldest = this.days[0];
    return oldest === undefined ? null : (oldest + 1) * DAY + keepMs;
  }

  /** Drops the tables of days past the window (no row written). */
  purge(at: number, keepMs: number): void {
    for (const day of this.days) {
      if ((day + 1) * DAY + keepMs > at) break;
      this.sql.exec(`DROP TABLE IF EXISTS ${tableOf(day)}`);
    }
    this.days = this.days.filter((day) => (day + 1) * DAY + keepMs > at);
  }

  private firstAttempt(
    numberId: string,
    eventId: string,
    from: number,
  ): { key: number; rowSeq: number; stored: Stored } | null {
    // A row's seq is its report's time: at or after the attempts it holds.
    let budget = READ_BUDGET;
    for (const day of this.days) {
      if ((day + 1) * DAY <= from) continue;
      for (const row of this.rows(day, numberId, "seq >= ? ORDER BY seq", [from], budget)) {
        budget--;
        const i = row.attempts.findIndex((s) => s.e === eventId && s.a >= from - 1);
        if (i >= 0) return { key: row.seq * ATTEMPTS_PER_ROW + i, rowSeq: row.seq, stored: row.attempts[i]! };
      }
      if (budget <= 0) break;
    }
    return null;
  }

  private rows(
    day: number,
    numberId: string,
    where: string,
    bindings: SqlStorageValue[],
    limit: number,
  ): { seq: number; attempts: Stored[] }[] {
    return this.sql
      .exec<{ seq: number; attempts: string }>(
        `SELECT seq, attempts FROM ${tableOf(day)} WHERE channel_number_id = ? AND ${where} LIMIT ?`,
        numberId,
        ...bindings,
        limit,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, attempts: (JSON.parse(r.attempts) as Packed[]).map(unpack) }));
  }

  private last(numberId: string): number {
    let seq = this.lastSeq.get(numberId);
    if (seq === undefined) {
      const newest = this.days[this.days.length - 1];
      seq =
        newest === undefined
          ? 0
          : (this.sql
              .exec<{ seq: number | null }>(
                `SELECT MAX(seq) AS seq FROM ${tableOf(newest)} WHERE channel_number_id = ?`,
                numberId,
              )
              .one().seq ?? 0);
      this.lastSeq.set(numberId, seq);
    }
    return seq;
  }
}
