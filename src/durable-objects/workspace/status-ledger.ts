import { inboundMessageId } from "../../lib/job-id";
import { newEventId, parseEventId, TEST_EVENT_MESSAGE, type WebhookEvent } from "../../messages/events";
import {
  type EventKind,
  type MessageStatus,
  type StatusResult,
  type StatusUpdate,
  type UnmatchedReport,
} from "../../messages/status";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { getMeta, setMeta } from "../shared/meta";
import { historyStub } from "../history/history";
import type { ClaimResult, WorkItem } from "./contract";
import type { InboundRecord } from "../../messages/inbound";
import type { WorkspaceContext } from "./context";
import { DailyCounts } from "./counts";
import type { MediaCopies } from "./media-copies";
import { changesOf, eventOf } from "./message-events";
import type { EventPublisher } from "./event-publisher";
import { isOutbound, lifecycleOf, type MessageRow, type OutboundRow } from "../../messages/record";
import { changedColumns, insertInbound, updateRecord, workOf } from "./records";
import { findByOperatorId, resolveLinks, STATUS_LOOKUP_MS } from "./message-links";
import { appendChanges, applyTransition } from "./status-transition";
import type { Tiers } from "./tiers";
import { forgetUnknown, matchUnknown, noteUnknown } from "./unknown-outcomes";

/**
 * What the number's claim may change: the compare-and-set that decides every grant, from storage
 * (one grant per attempt, none while a call is unanswered, none before a retry's time). Nothing is
 * decided from a row read earlier: a second instance of the number, or one whose queue is stale,
 * asks with whatever it believes, and only this says yes.
 */
const CLAIMABLE =
  "pending = 1 AND status IN ('queued', 'processing') AND outcome_unknown_since IS NULL AND attempts = answered AND attempts < ? AND (next_attempt_at IS NULL OR next_attempt_at <= ?)";

/**
 * Applying what happens to messages: the number's claims and answers, the operator's reports,
 * inbound messages. Each change owes its events in its own transaction (EventPublisher.owe); they
 * are rebuilt from the record when published (message-events.ts). The record is the only place a
 * fact is kept.
 */
export class StatusLedger {
  /** Reports being applied to records in history, per jobId: one at a time per record. */
  private readonly historyUpdates = new Map<string, Promise<StatusResult>>();

  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
    private readonly counts: DailyCounts,
    private readonly publisher: EventPublisher,
    /** jobIds whose send is between its hand-off to the number and its commit. */
    private readonly admitting: (jobId: string) => boolean,
    private readonly media: MediaCopies,
  ) {}

  /**
   * The number asks to call the operator for attempt `attempt` of `jobId`. Granted at most once
   * per attempt, only while no earlier claim is unanswered, and only for a record still queued or
   * retrying: the grant is the write that makes the call the number's (queued → processing).
   */
  claim(jobId: string, attempt: number): ClaimResult {
    if (this.admitting(jobId)) return { kind: "wait" };
    const at = this.tiers.locate(jobId);
    if (at.tier !== "slot") {
      if (at.tier === "history") log("warn", "claim for a record already in history", { jobId });
      return { kind: "never" };
    }
    const row = at.row;
    if (!isOutbound(row)) return { kind: "never" };
    if (row.status === "sent" || row.status === "failed") {
      // Settled by an operator report or an expiry while the number still listed it (a retry
      // waiting, or a call whose answer a restart lost): the number has no more work for it.
      if (row.pending === 1) this.w.storage.transactionSync(() => this.write(row, { pending: 0 }));
      return { kind: "settled", status: row.status };
    }
    const t = now();
    const next: Record<string, SqlStorageValue> = {
      status: "processing",
      attempts: attempt,
      // The first claim is the record's first change (a retry's claim changes nothing announced).
      ...(row.processing_at === null
        ? { processing_at: t, changes: appendChanges(lifecycleOf(row), ["processing"]) }
        : {}),
      updated_at: Math.max(t, row.updated_at),
    };
    const granted = this.w.storage.transactionSync(() => {
      if (!this.write(row, next, { sql: CLAIMABLE, bindings: [attempt, t] })) return false;
      this.announce(row, { ...row, ...next } as MessageRow);
      return true;
    });
    if (!granted) return refusal(row, t);
    return { kind: "go", payload: { to: row.recipient, type: row.type, body: row.body, content: row.content } };
  }

  /** A number's work list (records with work left), oldest first, after `afterId`. */
  workOf(channelNumberId: string, afterId: string, limit: number): WorkItem[] {
    return workOf(this.tiers.tables, this.w.sql, channelNumberId, afterId, limit).map((r) => ({
      jobId: r.id,
      recipient: r.recipient,
      acceptedAt: r.created_at,
      attempts: r.attempts ?? 0,
      answered: r.answered ?? 0,
      nextAttemptAt: r.next_attempt_at ?? null,
      firstAttemptAt: r.processing_at,
    }));
  }

  /**
   * The number's answers about its claims (`attempt` set), and the messages it gives up on
   * without a call (held too long, number disconnected). Returns once the changes are committed,
   * and with them the obligation to announce them: the number waits for nothing more.
   */
  answer(updates: StatusUpdate[]): { results: StatusResult[] } {
    // A give-up of a send still committing would find no record and be lost, and the record then
    // committed would wait for a number that dropped it: refused for now, the number hands it again.
    const early = updates.find((u) => u.attempt === undefined && this.admitting(u.jobId));
    if (early) throw new Error(`the send of ${early.jobId} is still committing; hand its give-up again`);
    const results = this.w.storage.transactionSync(() =>
      updates.map((u): StatusResult => {
        const at = this.tiers.locate(u.jobId);
        if (at.tier !== "slot") return { known: at.tier === "history", status: null };
        const row = at.row;
        if (!isOutbound(row)) return { known: false, status: null };
        const { next } = this.answerOf(row, u);
        if (next === null) return { known: true, status: row.status };
        this.write(row, next);
        const after = { ...row, ...next } as OutboundRow;
        this.afterStatusChange(row, after);
        this.announce(row, after);
        return { known: true, status: after.status };
      }),
    );
    return { results };
  }

  /** The columns an answer sets (null: nothing to change, the answer was applied before), and the change kinds it reports. */
  private answerOf(
    row: OutboundRow,
    u: StatusUpdate,
  ): { next: Record<string, SqlStorageValue> | null; own: EventKind[] } {
    const attempts = row.attempts ?? 0;
    const answered = row.answered ?? 0;
    const settled = row.status === "sent" || row.status === "failed";
    if (u.attempt === undefined) {
      // Given up without a call (held too long, number disconnected). Settled meanwhile, or already
      // an unknown outcome (on the list that fails it in time): the number's work for it ends here.
      if (settled || row.outcome_unknown_since !== null)
        return {
          next: row.pending === 1 ? { pending: 0 } : null,
          own: u.status === "failed" ? ["failed"] : [],
        };
      // A claim is unanswered (the number restarted during the call): the call may have reached the
      // operator, so it is not failed as unsent. It becomes an unknown outcome, like the claim's own
      // lost answer: listed, settled by the operator's report or failed when its window ends.
      if (attempts > answered)
        return this.answerOf(row, { jobId: u.jobId, at: u.at, attempt: attempts, outcomeUnknown: true });
      const t = applyTransition(lifecycleOf(row), u);
      return {
        next: { ...changedColumns(row, { ...t.next, updated_at: Math.max(u.at, row.updated_at) }), pending: 0 },
        own: ["failed"],
      };
    }
    const own: EventKind[] = [
      "processing",
      ...(u.status === "sent" ? (["sent"] as const) : u.status === "failed" ? (["failed"] as const) : []),
    ];
    if (u.attempt <= answered || u.attempt !== attempts) return { next: null, own };
    if (u.notSent) return { next: { attempts: u.attempt - 1 }, own: [] };
    if (u.retryAt !== undefined) return { next: { answered: u.attempt, next_attempt_at: u.retryAt }, own };
    if (settled) {
      // An operator report settled it during the call: the answer only closes the claim.
      return { next: { answered: u.attempt, pending: 0 }, own };
    }
    const t = applyTransition(lifecycleOf(row), u);
    const next: Record<string, SqlStorageValue> = {
      ...changedColumns(row, { ...t.next, updated_at: Math.max(u.at, row.updated_at) }),
      answered: u.attempt,
      pending: 0,
    };
    return { next, own };
  }

  /**
   * The operator's reports (its webhooks, the sandbox's simulation of them). Routed by our jobId.
   * They settle what a lost answer left unknown and stop pending retries; they never cause a call.
   * Duplicates and reports out of order change nothing. Returns once committed (the obligation to
   * announce with them), after a publication due at once was tried.
   */
  async report(updates: StatusUpdate[]): Promise<StatusResult[]> {
    const results = this.w.storage.transactionSync(() =>
      updates.map((u): StatusResult => {
        const at = this.tiers.locate(u.jobId);
        if (at.tier !== "slot") return { known: at.tier === "history", status: null };
        const row = at.row;
        if (!isOutbound(row)) return { known: false, status: null };
        // Only a message that was called can have reached the operator: a report about one never claimed is not ours to apply.
        if (row.status === "queued" && (row.attempts ?? 0) === 0) return { known: true, status: row.status };
        const t = applyTransition(lifecycleOf(row), u);
        if (!t.changed) return { known: true, status: row.status };
        const settles = (t.next.status === "sent" || t.next.status === "failed") && row.status !== t.next.status;
        const next: Record<string, SqlStorageValue> = changedColumns(row, {
          ...t.next,
          updated_at: Math.max(u.at, row.updated_at),
        });
        // Settled by the operator while the number still had it listed (a retry pending): it leaves the list; a call in flight answers anyway.
        if (settles && row.pending === 1 && (row.attempts ?? 0) === (row.answered ?? 0)) next.pending = 0;
        this.write(row, next);
        const after = { ...row, ...next } as OutboundRow;
        this.afterStatusChange(row, after);
        this.announce(row, after);
        return { known: true, status: after.status };
      }),
    );
    for (let i = 0; i < updates.length; i++) {
      if (results[i]!.known && results[i]!.status === null) results[i] = await this.reportInHistory(updates[i]!);
    }
    await this.publisher.settled();
    return results;
  }

  /**
   * A report about a record already in its day's history shard: the shard applies it (one chunk
   * rewritten) and returns the record before and after. Its events are owed here before the
   * shard's write (a crash after it finds them owed, and reads the record from the shard), and the
   * owed row is pinned until the write answered, so that a flush meanwhile keeps it. One at a time
   * per record.
   */
  private async reportInHistory(u: StatusUpdate): Promise<StatusResult> {
    const at = this.tiers.locate(u.jobId);
    const workspaceId = this.w.workspaceId();
    if (at.tier !== "history" || !workspaceId) return { known: false, status: null };
    const day = at.day;
    // A day whose archive is complete is past every report's window: its shard is being dropped.
    if (this.tiers.tables.archives.isClosing(day)) return { known: false, status: null };
    const earlier = this.historyUpdates.get(u.jobId) ?? Promise.resolve();
    const mine = earlier
      .catch(() => undefined)
      .then(async (): Promise<StatusResult> => {
        const shard = historyStub(this.w.env, workspaceId, day);
        // The day's counts are kept here, the record there: a change of status is counted from a
        // mark written before the shard's write (the status it had), so that a retry after a lost
        // answer (the shard changed the record, this object never heard of it: the shard now
        // answers "no change") still counts it, once. Only reports that change the status mark.
        const owedKey = `count-owed:${u.jobId}`;
        const current = await shard.get(u.jobId);
        if (current && isOutbound(current)) {
          const t = applyTransition(lifecycleOf(current), u);
          this.w.storage.transactionSync(() => {
            if (getMeta(this.w.sql, owedKey) === undefined && t.next.status !== current.status)
              setMeta(this.w.sql, owedKey, current.status);
            if (t.announce) this.publisher.owe(current.id, changesOf(current).length);
          });
        }
        // Before the shard's write: an archive of the day under way starts over (its parts may predate it).
        this.tiers.tables.archives.touch(day);
        this.publisher.pin(u.jobId);
        let change;
        try {
          change = await shard.applyStatus(u);
        } finally {
          this.publisher.unpin(u.jobId);
        }
        if (!change || !isOutbound(change.after)) return { known: false, status: null };
        if (change.changed) this.announce(change.before, change.after);
        const owed = getMeta(this.w.sql, owedKey) as MessageStatus | undefined;
        const before = owed ?? change.before.status;
        if (before !== change.after.status || owed !== undefined) {
          const after = change.after;
          this.w.storage.transactionSync(() => {
            if (before !== after.status)
              this.counts.note(
                after.id,
                after.channel_number_id,
                DailyCounts.statusDelta(before, after.status),
                "frozen",
              );
            this.w.sql.exec("DELETE FROM meta WHERE k = ?", owedKey);
          });
        }
        // After its event left: the list is what makes the expiry try again after a crash.
        if (change.after.outcome_unknown_since === null) forgetUnknown(this.w.sql, change.after.id);
        return { known: true, status: change.after.status as StatusResult["status"] };
      });
    this.historyUpdates.set(u.jobId, mine);
    try {
      return await mine;
    } finally {
      if (this.historyUpdates.get(u.jobId) === mine) this.historyUpdates.delete(u.jobId);
    }
  }

  /**
   * The messages operator reports without our jobId are about: a jobId or null per report. First
   * by the operator's id of the message, which the record keeps once the call's answer (or an
   * earlier report) named it, over the recipient's records of the last STATUS_LOOKUP_MS
   * (message-links.ts: one index range per slot, nothing written). Then, for a failure only, a
   * call whose answer was lost (we never learnt its operator id) by number, recipient and time
   * (unknown-outcomes.ts `matchUnknown`), never one such message for two reports.
   */
  matchReports(channelNumberId: string, reports: readonly UnmatchedReport[]): (string | null)[] {
    const taken = new Set<string>();
    const t = now();
    return reports.map((r) => {
      const known = findByOperatorId(
        this.tiers.tables,
        this.w.sql,
        r.recipients,
        r.upstreamMessageId,
        t,
        STATUS_LOOKUP_MS,
      );
      // Only our sends are reported on (`report` applies nothing to an inbound record anyway).
      if (known !== null) return known;
      if (!r.failed) return null;
      const id = matchUnknown(this.w.sql, channelNumberId, r.recipients, r.at);
      if (id === null || taken.has(id)) return null;
      taken.add(id);
      return id;
    });
  }

  /**
   * Records inbound messages once each (the operator retries its webhooks: a redelivery derives the
   * same id and finds the record) and owes each its `message.received` event in the insert's
   * transaction, published at once (a conversation waits on it). Returns our ids, in order, once
   * that publication was tried.
   */
  async recordInbound(workspaceId: string, records: InboundRecord[]): Promise<string[]> {
    const ids: string[] = [];
    // Every record with media not copied yet, redelivered ones too: a copy job is queued for each.
    const withMedia: MessageRow[] = [];
    const t = now();
    for (const m of records) {
      let id = inboundMessageId(this.w.env.JOB_ID_SECRET, workspaceId, m.channelNumberId, m.upstreamMessageId, m.at);
      const existing = (await this.findInbound(workspaceId, id)) ?? null;
      if (existing) {
        ids.push(existing.id);
        withMedia.push(existing);
        continue;
      }
      if (!this.tiers.writable(m.at, t)) {
        // Its operator time is on a day that already left this object (a first delivery days late):
        // recorded under the time it reached us instead. A redelivery of it may be recorded again.
        id = inboundMessageId(this.w.env.JOB_ID_SECRET, workspaceId, m.channelNumberId, m.upstreamMessageId, t);
      }
      // What it replies or reacts to, as our ids: fixed now, so that every rebuild of its event says the same.
      const details =
        m.details && Object.keys(m.details).length > 0
          ? resolveLinks(this.tiers.tables, this.w.sql, { ...m, details: m.details })
          : null;
      this.w.storage.transactionSync(() => {
        const inserted = insertInbound(this.tiers.tables, this.w.sql, {
          id,
          channelNumberId: m.channelNumberId,
          from: m.from,
          type: m.type,
          body: m.text ?? "",
          content: m.content === null ? null : JSON.stringify(m.content),
          details: detailsOf({ ...m, details }),
          upstreamMessageId: m.upstreamMessageId,
          receivedAt: m.at,
          at: t,
        });
        // In the insert's transaction: a late message may fall behind its slot's tally.
        if (inserted) {
          this.counts.note(id, m.channelNumberId, { received: 1 });
          this.publisher.owe(id, 0, true);
        }
      });
      const row = this.tiers.locate(id);
      ids.push(id);
      if (row.tier !== "slot") continue;
      withMedia.push(row.row);
    }
    await this.publisher.settled();
    await this.media.enqueue(this.media.jobsOf(workspaceId, withMedia));
    return ids;
  }

  /** An inbound message recorded before: here, or in a history shard (the operator retries for 7 days). */
  private async findInbound(workspaceId: string, id: string): Promise<MessageRow | null> {
    const at = this.tiers.locate(id);
    if (at.tier === "slot") return at.row;
    if (at.tier === "history") return historyStub(this.w.env, workspaceId, at.day).get(id);
    return null;
  }

  /** A `webhook.test` event for a number's webhook, published at once. */
  async recordTestEvent(workspaceId: string, channelNumberId: string): Promise<string> {
    const event = testEvent(workspaceId, channelNumberId, newEventId(now()));
    await this.w.env.WEBHOOK_QUEUE.send({ events: [event] }, { contentType: "json" });
    return event.id;
  }

  /** The event of one change of a record, rebuilt (a replay). */
  eventFor(row: MessageRow, kind: EventKind): WebhookEvent | null {
    const change = changesOf(row).find((c) => c.kind === kind);
    const workspaceId = this.w.workspaceId();
    return change && workspaceId ? eventOf(workspaceId, row, change) : null;
  }

  private write(
    row: MessageRow,
    set: Record<string, SqlStorageValue>,
    where?: { sql: string; bindings: SqlStorageValue[] },
  ): boolean {
    if (Object.keys(set).length === 0) return true;
    return updateRecord(this.tiers.tables, this.w.sql, row.id, set, where);
  }

  /**
   * Messages whose outcome stayed unknown for the operator's whole webhook window fail with
   * `upstream_outcome_unknown` (unknown-outcomes.ts), their events owed in the same transaction.
   * Each leaves the list once failed (a record in history once its shard answered).
   */
  async expireUnknowns(ids: string[], at: number, error: StatusUpdate["error"]): Promise<void> {
    const updates = ids.map((id): StatusUpdate => ({ jobId: id, at, status: "failed", error }));
    const inHistory: StatusUpdate[] = [];
    this.w.storage.transactionSync(() => {
      for (const u of updates) {
        const loc = this.tiers.locate(u.jobId);
        if (loc.tier === "history") {
          inHistory.push(u);
          continue;
        }
        if (loc.tier !== "slot") continue;
        if (!isOutbound(loc.row)) continue;
        const row = loc.row;
        const t = applyTransition(lifecycleOf(row), u);
        if (!t.changed) continue;
        const next = changedColumns(row, { ...t.next, updated_at: Math.max(u.at, row.updated_at) });
        this.write(row, next);
        const after = { ...row, ...next } as OutboundRow;
        this.afterStatusChange(row, after, { keepUnknown: true });
        this.announce(row, after);
      }
    });
    for (const u of inHistory) await this.reportInHistory(u);
    this.w.storage.transactionSync(() => {
      for (const id of ids) forgetUnknown(this.w.sql, id);
    });
  }

  /**
   * Records of a day about to be archived that their number still lists (its work for them never
   * ended: a number deleted with its queue, a lost answer): given up on by the claim's rules, like
   * the number's own give-up (`answerOf`), and their events published before the archive goes on
   * (the archive drops the records they are rebuilt from).
   */
  async giveUpBeforeArchive(ids: string[], at: number, error: StatusUpdate["error"]): Promise<void> {
    this.answer(ids.map((jobId): StatusUpdate => ({ jobId, at, status: "failed", error })));
    await this.publisher.flushNow();
  }

  /** Counts and the unknown-outcome list follow a committed change (inside its transaction). */
  private afterStatusChange(before: OutboundRow, after: OutboundRow, opts: { keepUnknown?: boolean } = {}): void {
    if (before.status !== after.status) {
      const delta = DailyCounts.statusDelta(before.status, after.status);
      this.counts.note(before.id, before.channel_number_id, delta);
    }
    if (before.outcome_unknown_since === null && after.outcome_unknown_since !== null)
      noteUnknown(this.w.sql, after.id, after.outcome_unknown_since, {
        number: after.channel_number_id,
        recipient: after.recipient,
      });
    if (before.outcome_unknown_since !== null && after.outcome_unknown_since === null && !opts.keepUnknown)
      forgetUnknown(this.w.sql, after.id);
  }

  /** The changes `after` has that `before` had not are owed their events (inside the change's transaction). */
  private announce(before: MessageRow, after: MessageRow): void {
    const from = changesOf(before).length;
    if (changesOf(after).length > from) this.publisher.owe(after.id, from);
  }
}

/** A `webhook.test` event, rebuilt from its id (which dates it) and its number. */
export function testEvent(workspaceId: string, channelNumberId: string, id: string): WebhookEvent {
  const parsed = parseEventId(id);
  const at = parsed && "test" in parsed ? parsed.at : now();
  return {
    id,
    type: "webhook.test",
    workspaceId,
    channelNumberId,
    createdAt: new Date(at).toISOString(),
    data: { message: TEST_EVENT_MESSAGE },
  };
}

/** The record's `details` JSON: what the operator told beyond the content, with the media under `media`. */
function detailsOf(m: InboundRecord): string | null {
  const details = { ...(m.details ?? {}), ...(m.media ? { media: m.media } : {}) };
  return Object.keys(details).length > 0 ? JSON.stringify(details) : null;
}

/**
 * Why a claim the compare-and-set refused was refused (read from the row as it is now: the write
 * decided, this only words the answer). A retry not yet due waits for its time; anything else was
 * claimed before (a call may be unanswered: the number reports its outcome unknown) or is claimed
 * past this attempt (a stale caller), and is not called.
 */
function refusal(row: OutboundRow, t: number): ClaimResult {
  const attempts = row.attempts ?? 0;
  const answered = row.answered ?? 0;
  if (
    row.outcome_unknown_since === null &&
    attempts === answered &&
    row.next_attempt_at !== null &&
    row.next_attempt_at !== undefined &&
    row.next_attempt_at > t
  )
    return { kind: "wait", until: row.next_attempt_at };
  return { kind: "claimed_before", attempts };
}
