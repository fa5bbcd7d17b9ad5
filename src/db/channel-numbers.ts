import type { Cursor } from "../lib/pagination";

export interface ChannelNumberRow {
  id: string;
  workspace_id: string;
  display_phone_number: string;
  upstream_type: "sandbox" | "cloud";
  upstream_phone_number_id: string | null;
  upstream_credentials: string | null;
  status: "connected" | "disconnected";
  created_at: string;
  disconnected_at: string | null;
}

export type InsertOutcome = "inserted" | "plan_limit" | "upstream_taken";

/**
 * Inserts a connected number only if the workspace stays within its plan's
 * maximum of connected numbers: the count and the insert are one statement, so
 * concurrent connects cannot both take the last slot. A live number whose
 * operator id is already connected (anywhere) is refused by the unique index.
 */
export async function insertChannelNumberWithinPlan(db: D1Database, row: ChannelNumberRow): Promise<InsertOutcome> {
  try {
    const result = await db
      .prepare(
        `INSERT INTO channel_numbers (id, workspace_id, display_phone_number, upstream_type, upstream_phone_number_id,
                                      upstream_credentials, status, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'connected', ?7
          WHERE (SELECT COUNT(*) FROM channel_numbers WHERE workspace_id = ?2 AND status = 'connected')
              < (SELECT p.max_numbers FROM workspaces w JOIN plans p ON p.id = w.plan_id WHERE w.id = ?2)`,
      )
      .bind(
        row.id,
        row.workspace_id,
        row.display_phone_number,
        row.upstream_type,
        row.upstream_phone_number_id,
        row.upstream_credentials,
        row.created_at,
      )
      .run();
    return result.meta.changes === 1 ? "inserted" : "plan_limit";
  } catch (err) {
    if (err instanceof Error && /UNIQUE constraint failed/i.test(err.message)) return "upstream_taken";
    throw err;
  }
}

export async function countConnected(db: D1Database, workspaceId: string): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM channel_numbers WHERE workspace_id = ? AND status = 'connected'")
    .bind(workspaceId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** A connected number of the workspace; a foreign or disconnected id reads as missing. */
export async function getConnectedNumber(
  db: D1Database,
  workspaceId: string,
  id: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare("SELECT * FROM channel_numbers WHERE id = ? AND workspace_id = ? AND status = 'connected'")
    .bind(id, workspaceId)
    .first<ChannelNumberRow>();
}

export async function getNumberById(db: D1Database, id: string): Promise<ChannelNumberRow | null> {
  return db.prepare("SELECT * FROM channel_numbers WHERE id = ?").bind(id).first<ChannelNumberRow>();
}

export async function findConnectedByUpstreamId(
  db: D1Database,
  upstreamPhoneNumberId: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare("SELECT * FROM channel_numbers WHERE upstream_phone_number_id = ? AND status = 'connected'")
    .bind(upstreamPhoneNumberId)
    .first<ChannelNumberRow>();
}

/**
 * The number whose object the operator's status reports for `upstreamPhoneNumberId` go to: the
 * connected one, else the one disconnected last (its outbox still knows the messages it sent).
 */
export async function findReportingNumberByUpstreamId(db: D1Database, upstreamPhoneNumberId: string): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `SELECT * FROM channel_numbers WHERE upstream_phone_number_id = ?
        ORDER BY status = 'connected' DESC, disconnected_at DESC LIMIT 1`,
    )
    .bind(upstreamPhoneNumberId)
    .first<ChannelNumberRow>();
}

export async function listConnectedNumbers(
  db: D1Database,
  workspaceId: string,
  limit: number,
  after?: Cursor,
): Promise<ChannelNumberRow[]> {
  const stmt = after
    ? db
        .prepare(
          `SELECT * FROM channel_numbers WHERE workspace_id = ? AND status = 'connected'
             AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
        )
        .bind(workspaceId, after.sortKey, after.id, limit)
    : db
        .prepare(
          "SELECT * FROM channel_numbers WHERE workspace_id = ? AND status = 'connected' ORDER BY created_at, id LIMIT ?",
        )
        .bind(workspaceId, limit);
  return (await stmt.all<ChannelNumberRow>()).results;
}

export async function listAllNumbers(db: D1Database, workspaceId: string): Promise<ChannelNumberRow[]> {
  const { results } = await db
    .prepare("SELECT * FROM channel_numbers WHERE workspace_id = ? ORDER BY created_at, id")
    .bind(workspaceId)
    .all<ChannelNumberRow>();
  return results;
}

export async function disconnectNumber(db: D1Database, id: string, at: string): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET status = 'disconnected', disconnected_at = COALESCE(disconnected_at, ?)
        WHERE id = ? RETURNING *`,
    )
    .bind(at, id)
    .first<ChannelNumberRow>();
}

/** Replaces a connected live number's sealed credentials; null when it is not a connected cloud number. */
export async function replaceCredentials(db: D1Database, id: string, sealed: string): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET upstream_credentials = ?
        WHERE id = ? AND status = 'connected' AND upstream_type = 'cloud' RETURNING *`,
    )
    .bind(sealed, id)
    .first<ChannelNumberRow>();
}
