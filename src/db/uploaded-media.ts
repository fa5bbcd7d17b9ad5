import type { UploadedMedia } from "../messages/uploaded-media";
import type { MediaKind } from "../messages/kinds/media";

// The media store's D1 rows (migrations/0033): a file's facts, and the operator's id of it per number.

interface UploadedMediaRow {
  id: string;
  workspace_id: string;
  kind: MediaKind;
  content_type: string;
  size: number;
  sha256: string;
  filename: string | null;
  created_at: number;
  expires_at: number;
}

const COLUMNS = "id, workspace_id, kind, content_type, size, sha256, filename, created_at, expires_at";

const toMedia = (row: UploadedMediaRow): UploadedMedia => ({
  id: row.id,
  kind: row.kind,
  contentType: row.content_type,
  size: row.size,
  sha256: row.sha256,
  filename: row.filename,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

export async function insertUploadedMedia(db: D1Database, workspaceId: string, m: UploadedMedia): Promise<void> {
  await db
    .prepare(`INSERT INTO uploaded_media (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .bind(m.id, workspaceId, m.kind, m.contentType, m.size, m.sha256, m.filename, m.createdAt, m.expiresAt)
    .run();
}

/** A file of the workspace, expired or not (another workspace's id reads as none). */
export async function findUploadedMedia(
  db: D1Database,
  workspaceId: string,
  id: string,
): Promise<UploadedMedia | null> {
  const row = await db
    .prepare(`SELECT ${COLUMNS} FROM uploaded_media WHERE id = ? AND workspace_id = ?`)
    .bind(id, workspaceId)
    .first<UploadedMediaRow>();
  return row ? toMedia(row) : null;
}

/** Up to `limit` files of the workspace not expired at `now`, in upload order, after the id `after`. */
export async function listUploadedMedia(
  db: D1Database,
  workspaceId: string,
  now: number,
  after: string | null,
  limit: number,
): Promise<UploadedMedia[]> {
  const { results } = await db
    .prepare(
      `SELECT ${COLUMNS} FROM uploaded_media
       WHERE workspace_id = ?1 AND id > ?2 AND expires_at > ?3 ORDER BY id LIMIT ?4`,
    )
    .bind(workspaceId, after ?? "", now, limit)
    .all<UploadedMediaRow>();
  return results.map(toMedia);
}

/** Deletes a file's row and its operator ids in one batch; false when the workspace has no such file. */
export async function deleteUploadedMedia(db: D1Database, workspaceId: string, id: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.prepare("DELETE FROM uploaded_media WHERE id = ? AND workspace_id = ?").bind(id, workspaceId),
    db
      .prepare(
        "DELETE FROM uploaded_media_operator_ids WHERE media_id = ?1 AND NOT EXISTS (SELECT 1 FROM uploaded_media WHERE id = ?1)",
      )
      .bind(id),
  ]);
  return (deleted?.meta.changes ?? 0) > 0;
}

/** Up to `limit` files expired at `now` (any workspace), oldest expiry first: the retention job's batch. */
export async function expiredUploadedMedia(
  db: D1Database,
  now: number,
  limit: number,
): Promise<{ id: string; workspaceId: string }[]> {
  const { results } = await db
    .prepare("SELECT id, workspace_id FROM uploaded_media WHERE expires_at <= ? ORDER BY expires_at LIMIT ?")
    .bind(now, limit)
    .all<{ id: string; workspace_id: string }>();
  return results.map((r) => ({ id: r.id, workspaceId: r.workspace_id }));
}

/** Deletes the rows (and their operator ids) of files whose bytes are gone, in one batch. */
export async function forgetUploadedMedia(db: D1Database, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const marks = ids.map(() => "?").join(", ");
  await db.batch([
    db.prepare(`DELETE FROM uploaded_media WHERE id IN (${marks})`).bind(...ids),
    db.prepare(`DELETE FROM uploaded_media_operator_ids WHERE media_id IN (${marks})`).bind(...ids),
  ]);
}

/** The operator's id of a file for a number, and when it was uploaded there; null when it never was. */
export async function findOperatorMediaId(
  db: D1Database,
  mediaId: string,
  channelNumberId: string,
): Promise<{ operatorMediaId: string; uploadedAt: number } | null> {
  const row = await db
    .prepare(
      "SELECT operator_media_id, uploaded_at FROM uploaded_media_operator_ids WHERE media_id = ? AND channel_number_id = ?",
    )
    .bind(mediaId, channelNumberId)
    .first<{ operator_media_id: string; uploaded_at: number }>();
  return row ? { operatorMediaId: row.operator_media_id, uploadedAt: row.uploaded_at } : null;
}

/**
 * Remembers the operator's id of a file for a number (a newer upload replaces an expired one); a
 * file deleted meanwhile gets no row (the same statement checks it is still there).
 */
export async function rememberOperatorMediaId(
  db: D1Database,
  mediaId: string,
  channelNumberId: string,
  operatorMediaId: string,
  uploadedAt: number,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO uploaded_media_operator_ids (media_id, channel_number_id, operator_media_id, uploaded_at)
       SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM uploaded_media WHERE id = ?1)
       ON CONFLICT (media_id, channel_number_id) DO UPDATE SET
         operator_media_id = excluded.operator_media_id, uploaded_at = excluded.uploaded_at`,
    )
    .bind(mediaId, channelNumberId, operatorMediaId, uploadedAt)
    .run();
}
