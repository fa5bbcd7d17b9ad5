import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import {
  storedMediaOf,
  withStoredMedia,
  type MediaCopy,
  type MediaCopyJob,
  type StoredMedia,
} from "../../messages/inbound-media";
import { getMeta, setMeta } from "../shared/meta";
import { NO_PROGRESS, type ScheduledStep } from "../shared/scheduler";
import { mediaDayPrefix } from "../history/media-keys";
import type { WorkspaceContext } from "./context";
import { dayOfId } from "./day-tables";
import type { MessageRow } from "../../messages/record";
import { updateRecord } from "./records";
import type { Tiers } from "./tiers";

/** R2 list pages (up to 1,000 objects each) deleted per alarm run when a day's media leave. */
const PURGE_PAGES_PER_RUN = 5;
/** Jobs per `sendBatch` (the queue's limit is 100 messages and 256 KB; a job is ~250 B). */
const JOBS_PER_BATCH = 100;

/** A day whose media are to be deleted from R2 (`meta` row, value: when its archive finished). */
const purgeKey = (day: number): string => `media-purge:${String(day).padStart(6, "0")}`;
const PURGE_FROM = "media-purge:";
const PURGE_UNTIL = "media-purge;";

/** Where a copy stands, for the copy job: null when the record is not here (moved, archived) or has no media. */
export interface MediaCopyState {
  copy: MediaCopy;
  receivedAt: number;
}

/** What a reservation decided: copy `size` bytes, or nothing to do (already settled, or over a cap now). */
export type Reservation = { kind: "go"; size: number; contentType: string } | { kind: "settled"; copy: MediaCopy };

/** What the copy job reports at the end. */
export type CopyOutcome = { state: "stored" } | { state: "failed"; reason: string };

/**
 * The workspace's side of inbound media copies (the bytes move in the `media-copies` queue's
 * consumer, src/queue/media-copies.ts): where each copy stands, kept in its record's
 * `details.media.copy`; the plan's caps, checked once per item when its size is known, the bytes
 * of a UTC day counted in the day ledger (`media`); and the deletion of a day's copies from R2 once
 * the day is archived (one `meta` row per such day until its folder is empty).
 *
 * Bound: no table of its own. One record update per copy state (pending → copying → stored), one
 * day-ledger write per reserved copy, one `meta` row per archived day that had copies, for as long
 * as its deletion takes (a few alarm runs).
 */
export class MediaCopies {
  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
  ) {}

  /** The copy jobs of these records (new or redelivered): those whose copy is not settled. */
  jobsOf(workspaceId: string, rows: MessageRow[]): MediaCopyJob[] {
    const jobs: MediaCopyJob[] = [];
    for (const row of rows) {
      const media = storedMediaOf(row.details);
      if (!media || (media.copy.state !== "pending" && media.copy.state !== "copying")) continue;
      jobs.push({ workspaceId, messageId: row.id, channelNumberId: row.channel_number_id, mediaId: media.id });
    }
    return jobs;
  }

  /** Queues copy jobs; a failure throws (the caller's operator item is retried, and queues them again). */
  async enqueue(jobs: MediaCopyJob[]): Promise<void> {
    for (let i = 0; i < jobs.length; i += JOBS_PER_BATCH) {
      await this.w.env.MEDIA_QUEUE.sendBatch(
        jobs.slice(i, i + JOBS_PER_BATCH).map((body) => ({ body, contentType: "json" as const })),
      );
    }
  }

  state(messageId: string): MediaCopyState | null {
    const found = this.find(messageId);
    return found ? { copy: found.media.copy, receivedAt: found.row.received_at ?? found.row.created_at } : null;
  }

  /**
   * The copy of `messageId` is `size` bytes: within the plan's item cap and the day's bytes, it is
   * counted against the day (once: a retry finds it `copying` and goes on); otherwise it is
   * recorded `over_cap` and nothing is copied.
   */
  async reserve(messageId: string, size: number, contentType: string): Promise<Reservation> {
    const workspaceId = this.w.workspaceId();
    const config = workspaceId ? await this.w.loadConfig(workspaceId) : null;
    // Read again after the await: another job's reservation may have changed the record or the day.
    const found = this.find(messageId);
    if (!found || !config) return { kind: "settled", copy: { state: "failed", reason: "The message is not here." } };
    const { row, media } = found;
    const copy = media.copy;
    if (copy.state === "copying") return { kind: "go", size: copy.size, contentType: copy.contentType };
    if (copy.state !== "pending") return { kind: "settled", copy };
    const day = dayOfId(row.id)!;
    const caps = config.media;
    const used = this.tiers.ledger.get(day).media?.bytes ?? 0;
    const next: MediaCopy =
      size > caps.maxItemBytes
        ? { state: "over_cap", size, cap: "item", capBytes: caps.maxItemBytes }
        : used + size > caps.dailyBytes
          ? { state: "over_cap", size, cap: "day", capBytes: caps.dailyBytes }
          : { state: "copying", size, contentType };
    this.w.storage.transactionSync(() => {
      this.write(row, media, next);
      if (next.state === "copying")
        this.tiers.ledger.update(day, (s) => ({
          ...s,
          media: { bytes: (s.media?.bytes ?? 0) + size, items: (s.media?.items ?? 0) + 1 },
        }));
    });
    return next.state === "copying" ? { kind: "go", size, contentType } : { kind: "settled", copy: next };
  }

  /** The copy job's end: stored in R2, or given up (a reserved size is given back to the day). Applying it twice changes nothing. */
  settle(messageId: string, outcome: CopyOutcome): MediaCopy | null {
    const found = this.find(messageId);
    if (!found) return null;
    const { row, media } = found;
    const copy = media.copy;
    if (copy.state !== "pending" && copy.state !== "copying") return copy;
    let next: MediaCopy;
    if (outcome.state === "stored") {
      if (copy.state !== "copying") return copy;
      next = { state: "stored", size: copy.size, contentType: copy.contentType, at: now() };
    } else {
      next = { state: "failed", reason: outcome.reason.slice(0, 300) };
    }
    const day = dayOfId(row.id)!;
    this.w.storage.transactionSync(() => {
      this.write(row, media, next);
      if (copy.state === "copying" && next.state === "failed")
        this.tiers.ledger.update(day, (s) => ({
          ...s,
          media: {
            bytes: Math.max(0, (s.media?.bytes ?? 0) - copy.size),
            items: Math.max(0, (s.media?.items ?? 0) - 1),
          },
        }));
    });
    return next;
  }

  /** Inside the archive's transaction: a day that had copies has them deleted next (the purge step). */
  dayArchived(day: number): void {
    if ((this.tiers.ledger.get(day).media?.items ?? 0) > 0) setMeta(this.w.sql, purgeKey(day), String(now()));
  }

  /** Deletes archived days' copies from R2, a few list pages per run, the oldest day first. */
  purgeStep(): ScheduledStep {
    return {
      name: "media-purge",
      // Due since the day's archive finished (the marker's value): the alarm that archived it runs it next.
      due: () => {
        const day = this.nextPurge();
        return day === null ? null : Number(getMeta(this.w.sql, purgeKey(day)) ?? 0);
      },
      run: async () => {
        const workspaceId = this.w.workspaceId();
        const day = this.nextPurge();
        if (day === null) return;
        if (!workspaceId) return NO_PROGRESS;
        const bucket = this.w.env.ARCHIVE;
        const prefix = mediaDayPrefix(workspaceId, day);
        for (let page = 0; page < PURGE_PAGES_PER_RUN; page++) {
          const listed = await bucket.list({ prefix, limit: 1000 });
          if (listed.objects.length > 0) await bucket.delete(listed.objects.map((o) => o.key));
          if (!listed.truncated) {
            this.w.sql.exec("DELETE FROM meta WHERE k = ?", purgeKey(day));
            log("info", "a day's media copies deleted", { day, objects: listed.objects.length });
            if (this.nextPurge() !== null) await this.w.wake(now());
            return;
          }
        }
        await this.w.wake(now());
      },
    };
  }

  private nextPurge(): number | null {
    const row = this.w.sql
      .exec<{ k: string }>("SELECT k FROM meta WHERE k > ? AND k < ? ORDER BY k LIMIT 1", PURGE_FROM, PURGE_UNTIL)
      .toArray()[0];
    return row ? Number(row.k.slice(PURGE_FROM.length)) : null;
  }

  /** A record of this object's slot tables with media (copies are made within hours: a record elsewhere is left alone). */
  private find(messageId: string): { row: MessageRow; media: StoredMedia } | null {
    const at = this.tiers.locate(messageId);
    if (at.tier !== "slot" || at.row.direction !== "inbound") return null;
    const media = storedMediaOf(at.row.details);
    return media ? { row: at.row, media } : null;
  }

  private write(row: MessageRow, media: StoredMedia, copy: MediaCopy): void {
    updateRecord(this.tiers.tables, this.w.sql, row.id, { details: withStoredMedia(row.details, { ...media, copy }) });
  }
}
