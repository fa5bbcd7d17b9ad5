import { isoNow } from "../lib/clock";
import { log } from "../lib/log";
import type { Cursor } from "../lib/pagination";

// D1 column names (upstream_*) and the stored type `cloud` (a live number) predate "operator" as the one word: kept, not migrated.
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
  /** Live numbers: what the operator said when last asked. */
  waba_id: string | null;
  verified_name: string | null;
  quality_rating: string | null;
  messaging_limit_tier: string | null;
  operator_checked_at: string | null;
  last_operator_error: string | null;
  /** The operator's last webhook about the number that is not applied here, as JSON (features/numbers/operator-notices.ts). */
  last_operator_notice: string | null;
  /** When the operator first refused the number's token, NULL while it has not (number-binding.ts). */
  unverified_since: string | null;
}

/** The operator's answer about a live number, as stored on its row. */
export interface StoredProfile {
  verified_name: string | null;
  quality_rating: string | null;
  messaging_limit_tier: string | null;
}

/** The columns of the operator's answer about a live number (`fetchNumberProfile`'s profile). */
export const storedProfileOf = (p: {
  verifiedName: string | null;
  qualityRating: string | null;
  messagingLimitTier: string | null;
}): StoredProfile => ({
  verified_name: p.verifiedName,
  quality_rating: p.qualityRating,
  messaging_limit_tier: p.messagingLimitTier,
});

export type InsertOutcome = "inserted" | "plan_limit" | "upstream_taken";

/** A new connected number's values, in the order of both INSERTs' `?1`…`?12`. */
function newNumberValues(row: ChannelNumberRow) {
  return [
    row.id,
    row.workspace_id,
    row.display_phone_number,
    row.upstream_type,
    row.upstream_phone_number_id,
    row.upstream_credentials,
    row.created_at,
    row.waba_id,
    row.verified_name,
    row.quality_rating,
    row.messaging_limit_tier,
    row.operator_checked_at,
  ];
}

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
                                      upstream_credentials, status, created_at,
                                      waba_id, verified_name, quality_rating, messaging_limit_tier, operator_checked_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'connected', ?7, ?8, ?9, ?10, ?11, ?12
          WHERE (SELECT COUNT(*) FROM channel_numbers WHERE workspace_id = ?2 AND status = 'connected')
              < (SELECT p.max_numbers FROM workspaces w JOIN plans p ON p.id = w.plan_id WHERE w.id = ?2)`,
      )
      .bind(...newNumberValues(row))
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

export async function findConnectedByOperatorId(
  db: D1Database,
  operatorPhoneNumberId: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare("SELECT * FROM channel_numbers WHERE upstream_phone_number_id = ? AND status = 'connected'")
    .bind(operatorPhoneNumberId)
    .first<ChannelNumberRow>();
}

/**
 * The number whose object the operator's status reports for `operatorPhoneNumberId` go to: the
 * connected one, else the one disconnected last (its outbox still knows the messages it sent).
 */
export async function findReportingNumberByOperatorId(
  db: D1Database,
  operatorPhoneNumberId: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `SELECT * FROM channel_numbers WHERE upstream_phone_number_id = ?
        ORDER BY status = 'connected' DESC, disconnected_at DESC LIMIT 1`,
    )
    .bind(operatorPhoneNumberId)
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

/**
 * Replaces a connected live number's sealed credentials (the operator confirmed them), which
 * verifies its binding again; null when it is not a connected live number.
 */
export async function replaceCredentials(db: D1Database, id: string, sealed: string): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET upstream_credentials = ?, unverified_since = NULL
        WHERE id = ? AND status = 'connected' AND upstream_type = 'cloud' RETURNING *`,
    )
    .bind(sealed, id)
    .first<ChannelNumberRow>();
}

/** A connected number of the workspace disconnected now; null when there is no such connected number. */
export async function disconnectOwnNumber(
  db: D1Database,
  workspaceId: string,
  id: string,
  at: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET status = 'disconnected', disconnected_at = ?
        WHERE id = ? AND workspace_id = ? AND status = 'connected' RETURNING *`,
    )
    .bind(at, id, workspaceId)
    .first<ChannelNumberRow>();
}

/**
 * Replaces a connected live number's sealed token and what the operator said when it was verified;
 * `wabaId`, when given, is the business account the operator confirmed the number in (the admin API
 * sets it on numbers connected without one).
 */
export async function replaceCredentialsAndProfile(
  db: D1Database,
  id: string,
  sealed: string,
  profile: StoredProfile,
  at: string,
  wabaId: string | null = null,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET upstream_credentials = ?, verified_name = ?, quality_rating = ?, messaging_limit_tier = ?,
              operator_checked_at = ?, last_operator_error = NULL, unverified_since = NULL, waba_id = COALESCE(?, waba_id)
        WHERE id = ? AND status = 'connected' AND upstream_type = 'cloud' RETURNING *`,
    )
    .bind(sealed, profile.verified_name, profile.quality_rating, profile.messaging_limit_tier, at, wabaId, id)
    .first<ChannelNumberRow>();
}

/**
 * Marks a connected live number's binding unverified: the operator refused its token. The first
 * refusal's time is kept; `error` becomes its last operator error. Null when it is not such a number.
 */
export async function markUnverified(
  db: D1Database,
  id: string,
  at: string,
  error: string,
): Promise<ChannelNumberRow | null> {
  return db
    .prepare(
      `UPDATE channel_numbers SET unverified_since = COALESCE(unverified_since, ?), last_operator_error = ?
        WHERE id = ? AND status = 'connected' AND upstream_type = 'cloud' RETURNING *`,
    )
    .bind(at, error, id)
    .first<ChannelNumberRow>();
}

/**
 * Marks the number's binding unverified after the operator refused its token (`what`: where, in
 * words with the operator's status and code, never the token; domain/number-binding.ts says why).
 * Idempotent; a disconnected or sandbox number is left alone. Throws only when D1 fails.
 */
export async function tokenRefused(db: D1Database, numberId: string, what: string): Promise<void> {
  const row = await markUnverified(db, numberId, isoNow(), what.slice(0, 300));
  if (row) log("warn", "operator refused a number's token; its binding is unverified", { channelNumberId: numberId });
}

/**
 * Moves a live number whose binding is unverified to the workspace that just proved control of
 * it, in one transaction (a D1 batch): the old row is disconnected only while it is still
 * connected and unverified, and the new one inserted only while the claimant's plan has room. If
 * the old row is still connected after the first statement, the unique index on connected
 * operator ids refuses the insert and the batch changes nothing. `old` is null when no row was
 * connected any more (a plain connect).
 */
export async function claimUnverifiedNumber(
  db: D1Database,
  oldId: string,
  row: ChannelNumberRow,
): Promise<{ outcome: "inserted"; old: ChannelNumberRow | null } | { outcome: "plan_limit" | "upstream_taken" }> {
  const hasRoom = `(SELECT COUNT(*) FROM channel_numbers WHERE workspace_id = ?2 AND status = 'connected')
                 < (SELECT p.max_numbers FROM workspaces w JOIN plans p ON p.id = w.plan_id WHERE w.id = ?2)`;
  try {
    const [disconnected, inserted] = await db.batch([
      db
        .prepare(
          `UPDATE channel_numbers SET status = 'disconnected', disconnected_at = ?3
            WHERE id = ?1 AND status = 'connected' AND unverified_since IS NOT NULL AND ${hasRoom} RETURNING *`,
        )
        .bind(oldId, row.workspace_id, row.created_at),
      db
        .prepare(
          `INSERT INTO channel_numbers (id, workspace_id, display_phone_number, upstream_type, upstream_phone_number_id,
                                        upstream_credentials, status, created_at,
                                        waba_id, verified_name, quality_rating, messaging_limit_tier, operator_checked_at)
           SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'connected', ?7, ?8, ?9, ?10, ?11, ?12 WHERE ${hasRoom}`,
        )
        .bind(...newNumberValues(row)),
    ]);
    if (inserted?.meta.changes !== 1) return { outcome: "plan_limit" };
    return { outcome: "inserted", old: (disconnected?.results as ChannelNumberRow[] | undefined)?.[0] ?? null };
  } catch (err) {
    if (err instanceof Error && /UNIQUE constraint failed/i.test(err.message)) return { outcome: "upstream_taken" };
    throw err;
  }
}

/**
 * Clears the sealed tokens of numbers disconnected before `before` (no media copy needs them any
 * more), at most `limit` per call, through the index of disconnected numbers that still hold one.
 * How many were cleared.
 */
export async function clearSealedTokensDisconnectedBefore(
  db: D1Database,
  before: string,
  limit: number,
): Promise<number> {
  const result = await db
    .prepare(
      `UPDATE channel_numbers SET upstream_credentials = NULL
        WHERE id IN (SELECT id FROM channel_numbers INDEXED BY channel_numbers_sealed_after_disconnect
                      WHERE status = 'disconnected' AND upstream_credentials IS NOT NULL AND disconnected_at < ?
                      LIMIT ?)`,
    )
    .bind(before, limit)
    .run();
  return result.meta.changes;
}

/** Records an hourly refresh: the operator's answer, or its refusal (the last known profile is kept). */
export async function recordOperatorCheck(
  db: D1Database,
  id: string,
  at: string,
  result: { profile: StoredProfile } | { error: string },
): Promise<ChannelNumberRow | null> {
  const stmt =
    "profile" in result
      ? db
          .prepare(
            `UPDATE channel_numbers SET verified_name = ?, quality_rating = ?, messaging_limit_tier = ?, operator_checked_at = ?,
                    last_operator_error = NULL WHERE id = ? RETURNING *`,
          )
          .bind(
            result.profile.verified_name,
            result.profile.quality_rating,
            result.profile.messaging_limit_tier,
            at,
            id,
          )
      : db
          .prepare(
            "UPDATE channel_numbers SET operator_checked_at = ?, last_operator_error = ? WHERE id = ? RETURNING *",
          )
          .bind(at, result.error, id);
  return stmt.first<ChannelNumberRow>();
}

/** The display number's digits in SQL (stored as `+digits`; spaces, dashes and brackets dropped defensively). */
const DISPLAY_DIGITS_SQL =
  "REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(display_phone_number, '+', ''), ' ', ''), '-', ''), '(', ''), ')', '')";

/**
 * Applies the operator's quality webhook to the connected live numbers with these display digits
 * (of this business account when the webhook names one and the row knows its own): a null rating or
 * tier keeps the stored one. `checkedAt` null makes the next read ask the operator. The ids updated.
 */
export async function applyOperatorQualityUpdate(
  db: D1Database,
  match: { displayDigits: string; wabaId: string | null },
  update: { quality_rating: string | null; messaging_limit_tier: string | null; checkedAt: string | null },
): Promise<string[]> {
  const { results } = await db
    .prepare(
      `UPDATE channel_numbers SET quality_rating = COALESCE(?1, quality_rating), messaging_limit_tier = COALESCE(?2, messaging_limit_tier),
              operator_checked_at = ?3
        WHERE status = 'connected' AND upstream_type = 'cloud' AND ${DISPLAY_DIGITS_SQL} = ?4
          AND (?5 IS NULL OR waba_id IS NULL OR waba_id = ?5) RETURNING id`,
    )
    .bind(update.quality_rating, update.messaging_limit_tier, update.checkedAt, match.displayDigits, match.wabaId)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/**
 * Records the operator's word about a business account (a ban, a restriction, a violation, its
 * access removed) as the last operator error of its connected live numbers; with `unverifiedAt`,
 * their bindings become unverified too (number-binding.ts). The ids updated.
 */
export async function recordOperatorAccountError(
  db: D1Database,
  wabaId: string,
  error: string,
  unverifiedAt: string | null = null,
): Promise<string[]> {
  const { results } = await db
    .prepare(
      `UPDATE channel_numbers SET last_operator_error = ?1,
              unverified_since = CASE WHEN ?2 IS NULL THEN unverified_since ELSE COALESCE(unverified_since, ?2) END
        WHERE status = 'connected' AND upstream_type = 'cloud' AND waba_id = ?3 RETURNING id`,
    )
    .bind(error, unverifiedAt, wabaId)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** Disconnects every connected live number of a business account (the operator deleted it); the rows disconnected. */
export async function disconnectAccountNumbers(
  db: D1Database,
  wabaId: string,
  at: string,
): Promise<ChannelNumberRow[]> {
  const { results } = await db
    .prepare(
      `UPDATE channel_numbers SET status = 'disconnected', disconnected_at = ?, last_operator_error = ?
        WHERE status = 'connected' AND upstream_type = 'cloud' AND waba_id = ? RETURNING *`,
    )
    .bind(at, "The operator deleted the business account (ACCOUNT_DELETED).", wabaId)
    .all<ChannelNumberRow>();
  return results;
}

/**
 * Records a notice (JSON, features/numbers/operator-notices.ts) on the connected live number the operator named by
 * its id, or, when it named none, on every connected live number of its business account; the ids
 * updated. With `unlessSameFieldSince` (ISO time), a number whose notice is already about `field`
 * and dated at or after it is left as it is (a field the operator sends with every message of a
 * number writes its row at most that often).
 */
export async function recordOperatorNotice(
  db: D1Database,
  match: { phoneNumberId: string | null; wabaId: string | null },
  notice: { field: string; json: string },
  unlessSameFieldSince: string | null = null,
): Promise<string[]> {
  const { results } = await db
    .prepare(
      `UPDATE channel_numbers SET last_operator_notice = ?1
        WHERE status = 'connected' AND upstream_type = 'cloud'
          AND (upstream_phone_number_id = ?2 OR (?2 IS NULL AND waba_id = ?3))
          AND (?4 IS NULL OR last_operator_notice IS NULL OR json_extract(last_operator_notice, '$.field') IS NOT ?5
               OR json_extract(last_operator_notice, '$.at') < ?4)
        RETURNING id`,
    )
    .bind(notice.json, match.phoneNumberId, match.wabaId, unlessSameFieldSince, notice.field)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}
