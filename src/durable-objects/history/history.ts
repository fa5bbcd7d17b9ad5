import { DurableObject } from "cloudflare:workers";
import { ensureSchema, schemaVersion } from "../shared/schema-version";
import { HISTORY_SCHEMA } from "./schema";
import { isOutbound, lifecycleOf, type MessageRow } from "../../messages/record";
import { applyTransition } from "../workspace/status-transition";
import type { StatusUpdate } from "../../messages/status";
import { type Page } from "../workspace/message-queries";
import { matches, type Keyset, type MessageFilter } from "../../messages/list";
import { uuidV7Floor, uuidV7Time } from "../../lib/job-id";
import { archiveRows, type ArchiveProgress } from "./archive-writer";

export interface ShardChange {
  before: MessageRow;
  after: MessageRow;
  changed: boolean;
}

interface Chunk {
  lo: string;
  hi: string;
  rows: string;
  [key: string]: SqlStorageValue;
}

/**
 * One per workspace and UTC day (`<workspaceId>:<day>`): the message records of that day once
 * they leave a busy workspace object (a quiet workspace keeps its days until they are archived).
 * Lists and reads reach it through the workspace object; late status reports (a read receipt days
 * later) are applied here. When the day leaves the plan's window it is written to R2 and dropped.
 *
 * Records arrive in key order, a few hundred at a time, and are kept that way: one row per
 * `chunk` (its first and last id, and the records as JSON), so a move writes one row per chunk
 * instead of one per record and its indexes. A record is found by the one chunk whose range holds
 * its id; a late report rewrites that chunk.
 *
 * Bound: one day of one workspace: at the full 1,200 messages a minute, 1.73 M records of ~650 B in
 * ~8,700 chunks (~1.1 GB); deleted after the retention window.
 */
export class MessageHistoryDurableObject extends DurableObject<Env> {
  protected readonly sql: SqlStorage;
  /** A shard nothing was moved to, or one archived and dropped, has no tables and writes none. */
  protected hasTables: boolean;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.hasTables = schemaVersion(this.sql) > 0;
    if (this.hasTables) ensureSchema(ctx.storage, HISTORY_SCHEMA);
  }

  /** Takes over one chunk of records (ascending ids, one range no other chunk overlaps). Idempotent: a chunk moved twice is written once. */
  async putChunk(rows: MessageRow[]): Promise<void> {
    if (rows.length === 0) return;
    this.ensureTables();
    const lo = rows[0]!.id;
    const hi = rows[rows.length - 1]!.id;
    this.sql.exec("INSERT OR REPLACE INTO chunks (lo, hi, rows) VALUES (?, ?, ?)", lo, hi, JSON.stringify(rows));
  }

  async get(id: string): Promise<MessageRow | null> {
    if (!this.hasTables) return null;
    const found = this.chunkOf(id);
    return found?.rows.find((r) => r.id === id) ?? null;
  }

  /** One page of the day, newest first, strictly older than `after` (see message-queries.ts). */
  async list(filter: MessageFilter, after: Keyset | null, limit: number, budget: number): Promise<Page> {
    if (!this.hasTables) return { rows: [], next: null, scanned: 0 };
    const rows: MessageRow[] = [];
    let scanned = 0;
    let before = after?.id ?? "~";
    const from = filter.createdFrom === undefined ? "" : uuidV7Floor(filter.createdFrom);
    const until = filter.createdUntil === undefined ? "~" : uuidV7Floor(filter.createdUntil);
    if (until < before) before = until;
    for (;;) {
      const chunk = this.sql
        .exec<Chunk>("SELECT * FROM chunks WHERE lo < ? ORDER BY lo DESC LIMIT 1", before)
        .toArray()[0];
      if (!chunk || chunk.hi < from) break;
      const records = (JSON.parse(chunk.rows) as MessageRow[]).filter((r) => r.id < before && r.id >= from).reverse();
      for (const r of records) {
        scanned++;
        if (!matches(r, filter)) continue;
        if (rows.length === limit) return { rows, next: chunkKeyset(rows[rows.length - 1]!), scanned };
        rows.push(r);
      }
      before = chunk.lo;
      if (scanned >= budget) {
        const last = rows[rows.length - 1];
        return {
          rows,
          next: rows.length === limit && last ? chunkKeyset(last) : { createdAt: uuidV7Time(before) ?? 0, id: before },
          scanned,
        };
      }
    }
    return { rows, next: null, scanned };
  }

  /**
   * A late status report for a record of this day. Returns the record before and after (the
   * workspace announces the change), or null when the shard does not hold it.
   */
  async applyStatus(update: StatusUpdate): Promise<ShardChange | null> {
    if (!this.hasTables) return null;
    const found = this.chunkOf(update.jobId);
    if (found) {
      const i = found.rows.findIndex((r) => r.id === update.jobId);
      const row = found.rows[i];
      if (!row || !isOutbound(row)) return null;
      const t = applyTransition(lifecycleOf(row), update);
      if (!t.changed) return { before: row, after: row, changed: false };
      const after: MessageRow = {
        ...row,
        ...t.next,
        updated_at: Math.max(update.at, row.updated_at),
        pending: t.next.status === "sent" || t.next.status === "failed" ? 0 : row.pending,
      };
      found.rows[i] = after;
      this.sql.exec("UPDATE chunks SET rows = ? WHERE lo = ?", JSON.stringify(found.rows), found.lo);
      return { before: row, after, changed: true };
    }
    return null;
  }

  /**
   * Writes up to `maxParts` more parts of the day to R2 (see archive-writer.ts), from the chunks in
   * key order. Returns the progress to hand back on the
   * next call, and whether the day is complete (its manifest written).
   */
  async archive(
    workspaceId: string,
    day: number,
    progress: ArchiveProgress,
    maxParts: number,
  ): Promise<ArchiveProgress> {
    // Chunks in key order: the cursor is the first id of the last chunk read.
    const read = (cursor: string | null, limit: number): { rows: MessageRow[]; cursor: string | null } => {
      if (!this.hasTables) return { rows: [], cursor };
      const rows: MessageRow[] = [];
      let after = cursor ?? "";
      while (rows.length < limit) {
        const chunk = this.sql.exec<Chunk>("SELECT * FROM chunks WHERE lo > ? ORDER BY lo LIMIT 1", after).toArray()[0];
        if (!chunk) break;
        rows.push(...(JSON.parse(chunk.rows) as MessageRow[]));
        after = chunk.lo;
      }
      return { rows, cursor: after };
    };
    return archiveRows(this.env.ARCHIVE, workspaceId, day, progress, maxParts, read);
  }

  /** Deletes the day's storage (after its archive is confirmed). */
  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    // A late call finds no tables and answers as an empty shard; nothing is created again.
    this.hasTables = false;
  }

  private ensureTables(): void {
    if (this.hasTables) return;
    ensureSchema(this.ctx.storage, HISTORY_SCHEMA);
    this.hasTables = true;
  }

  private chunkOf(id: string): { lo: string; rows: MessageRow[] } | null {
    const chunk = this.sql.exec<Chunk>("SELECT * FROM chunks WHERE lo <= ? ORDER BY lo DESC LIMIT 1", id).toArray()[0];
    if (!chunk || chunk.hi < id) return null;
    return { lo: chunk.lo, rows: JSON.parse(chunk.rows) as MessageRow[] };
  }
}

const chunkKeyset = (r: MessageRow): Keyset => ({ createdAt: uuidV7Time(r.id) ?? r.created_at, id: r.id });

export const historyStub = (env: Env, workspaceId: string, day: number) =>
  env.HISTORY.get(env.HISTORY.idFromName(`${workspaceId}:${day}`));
