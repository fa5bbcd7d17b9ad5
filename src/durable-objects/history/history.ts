import { DurableObject } from "cloudflare:workers";
import { now } from "../../lib/clock";
import { getMeta, setMeta } from "../shared/meta";
import { ensureSchema } from "../shared/schema-version";
import { HISTORY_SCHEMA } from "./schema";
import {
  findInboundByUpstreamId,
  findMessage,
  isOutbound,
  lifecycleOf,
  putRows,
  toMessageView,
  writeLifecycle,
  type MessageRow,
} from "../workspace/messages";
import { listPage, type Keyset, type MessageFilter, type Page } from "../workspace/message-queries";
import { applyTransition } from "../workspace/status-transition";
import type { StatusUpdate } from "../workspace/contract";
import { manifestKey, partKey, dayString, type ArchiveManifest } from "./archive-keys";

/** Messages per archive part: about 8 MB of NDJSON, 1–2 MB compressed. */
const PART_ROWS = 20_000;

export interface ShardChange {
  before: MessageRow;
  after: MessageRow;
  announce: boolean;
}

const gzip = (text: string): Promise<ArrayBuffer> =>
  new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();

/**
 * One per workspace and UTC day (`<workspaceId>:<day>`): the message records of
 * that day once they leave the workspace object's hot window (48 hours). Lists
 * and reads reach it through the workspace object; late status reports (a read
 * receipt days later) are applied here. When the day leaves the plan's
 * retention window it writes itself to R2, part by part, then deletes its storage.
 *
 * Bound: one day of one workspace: at the full 1,200 messages a minute, 1.73 M
 * rows of ~560 B with indexes, ~1 GB; deleted after the retention window.
 */
export class MessageHistoryDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  /** Whether this shard holds tables: a shard nothing was moved to, or one archived and dropped, has none and writes none. */
  private hasTables: boolean;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    // Only a shard that holds a day upgrades its schema; an empty one stays empty (an empty
    // object is not billed for storage, and every table created would be rows written).
    this.hasTables =
      this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").toArray().length > 0;
    if (this.hasTables) ensureSchema(ctx.storage, HISTORY_SCHEMA);
  }

  /** Takes messages over from the workspace object (an upsert: moving a row twice changes nothing). */
  async put(workspaceId: string, day: number, rows: MessageRow[]): Promise<void> {
    if (!this.hasTables) {
      ensureSchema(this.ctx.storage, HISTORY_SCHEMA);
      this.hasTables = true;
    }
    this.ctx.storage.transactionSync(() => {
      // Named once: each upsert of an unchanged value would still be a row written.
      if (getMeta(this.sql, "workspace_id") !== workspaceId) setMeta(this.sql, "workspace_id", workspaceId);
      if (getMeta(this.sql, "day") !== String(day)) setMeta(this.sql, "day", String(day));
      putRows(this.sql, rows);
    });
  }

  async get(id: string): Promise<MessageRow | null> {
    if (!this.hasTables) return null;
    return findMessage(this.sql, id) ?? null;
  }

  async list(filter: MessageFilter, after: Keyset | null, limit: number, budget: number): Promise<Page> {
    if (!this.hasTables) return { rows: [], next: null, scanned: 0 };
    return listPage(this.sql, filter, after, limit, budget);
  }

  /** A late status report for a message of this day; the workspace object records the event. */
  async applyStatus(update: StatusUpdate): Promise<ShardChange | null> {
    if (!this.hasTables) return null;
    const row = findMessage(this.sql, update.jobId);
    if (!row || !isOutbound(row)) return null;
    const t = applyTransition(lifecycleOf(row), update);
    if (!t.changed) return { before: row, after: row, announce: false };
    writeLifecycle(this.sql, row.id, t.next, Math.max(update.at, row.updated_at));
    return { before: row, after: findMessage(this.sql, row.id)!, announce: t.announce };
  }

  /** An inbound message of this day by the operator's id (a redelivery after it left the hot window). */
  async findInbound(upstreamMessageId: string): Promise<MessageRow | null> {
    if (!this.hasTables) return null;
    return findInboundByUpstreamId(this.sql, upstreamMessageId) ?? null;
  }

  /**
   * Writes up to `maxParts` more parts of the day to R2 (in (created_at, id)
   * order, so a retry writes the same objects), then the manifest when all are
   * written. Returns whether the day is completely archived. `earlier` is what
   * an earlier archive of this day holds (the day was re-created after it):
   * parts are numbered after its parts and the manifest counts both, so that
   * nothing archived is ever overwritten.
   */
  async archive(
    maxParts: number,
    earlier: { parts: number; messages: number } | null = null,
  ): Promise<{ done: boolean; manifest: ArchiveManifest | null }> {
    if (!this.hasTables) return { done: true, manifest: null };
    const workspaceId = getMeta(this.sql, "workspace_id");
    const day = Number(getMeta(this.sql, "day"));
    if (!workspaceId || !Number.isInteger(day)) return { done: true, manifest: null };
    let part = Number(getMeta(this.sql, "archived_parts") ?? earlier?.parts ?? 0);
    let count = Number(getMeta(this.sql, "archived_messages") ?? earlier?.messages ?? 0);
    let after = JSON.parse(getMeta(this.sql, "archived_through") ?? "null") as Keyset | null;
    for (let written = 0; written < maxParts; written++) {
      const rows = this.sql
        .exec<MessageRow>(
          after
            ? "SELECT * FROM messages WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?"
            : "SELECT * FROM messages ORDER BY created_at, id LIMIT ?",
          ...(after ? [after.createdAt, after.id, PART_ROWS] : [PART_ROWS]),
        )
        .toArray();
      if (rows.length === 0) {
        const manifest: ArchiveManifest = {
          day: dayString(day),
          parts: part,
          messages: count,
          archivedAt: new Date(now()).toISOString(),
        };
        await this.env.ARCHIVE.put(manifestKey(workspaceId, day), JSON.stringify(manifest), {
          httpMetadata: { contentType: "application/json" },
        });
        return { done: true, manifest };
      }
      const body = await gzip(`${rows.map((r) => JSON.stringify(toMessageView(r))).join("\n")}\n`);
      await this.env.ARCHIVE.put(partKey(workspaceId, day, part), body, {
        httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
        customMetadata: { messages: String(rows.length) },
      });
      const last = rows[rows.length - 1]!;
      part++;
      count += rows.length;
      after = { createdAt: last.created_at, id: last.id };
      // Progress is kept only once the part is in R2: a crash rewrites that part, never skips it.
      this.ctx.storage.transactionSync(() => {
        setMeta(this.sql, "archived_parts", String(part));
        setMeta(this.sql, "archived_messages", String(count));
        setMeta(this.sql, "archived_through", JSON.stringify(after));
      });
    }
    return { done: false, manifest: null };
  }

  /** Deletes the day's storage (after its archive is confirmed). The workspace no longer routes anything here. */
  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    // A late call finds no tables and answers as an empty shard; nothing is created again.
    this.hasTables = false;
  }

  /** Rows and bytes held (operator view, bench). */
  async size(): Promise<{ messages: number; bytes: number }> {
    if (!this.hasTables) return { messages: 0, bytes: this.sql.databaseSize };
    return {
      messages: this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n,
      bytes: this.sql.databaseSize,
    };
  }
}

export const historyStub = (env: Env, workspaceId: string, day: number) =>
  env.HISTORY.get(env.HISTORY.idFromName(`${workspaceId}:${day}`));
