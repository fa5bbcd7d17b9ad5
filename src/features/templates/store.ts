import { log } from "../../lib/log";
import { TemplateSpec, type ParameterFormat, type StoredTemplate } from "../../domain/template";

// The templates of live numbers' business accounts and each account's sync state.

interface TemplateRow {
  waba_id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  parameter_format: string;
  components: string;
  synced_at: string;
}

export interface SyncStateRow {
  waba_id: string;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  cursor: string | null;
  pass_started_at: string | null;
  requested_at: string | null;
}

/** A stored row as the domain reads it; null (and logged) when its spec no longer parses. */
function fromRow(r: TemplateRow): StoredTemplate | null {
  const spec = TemplateSpec.safeParse(JSON.parse(r.components));
  if (!spec.success) {
    log("warn", "stored template spec unreadable; skipped", { wabaId: r.waba_id, name: r.name });
    return null;
  }
  return {
    account: r.waba_id,
    name: r.name,
    language: r.language,
    category: r.category,
    status: r.status,
    parameterFormat: r.parameter_format as ParameterFormat,
    spec: spec.data,
    syncedAt: r.synced_at,
  };
}

const stored = (rows: TemplateRow[]): StoredTemplate[] =>
  rows.map(fromRow).filter((t): t is StoredTemplate => t !== null);

export type TemplateWrite = Omit<StoredTemplate, "account" | "syncedAt">;

/** Inserts or refreshes templates of an account in one batch (one page of a sync). */
export async function upsertTemplates(
  db: D1Database,
  wabaId: string,
  templates: readonly TemplateWrite[],
  at: string,
): Promise<void> {
  if (templates.length === 0) return;
  const stmt = db.prepare(
    `INSERT INTO message_templates (waba_id, name, language, category, status, parameter_format, components, synced_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (waba_id, name, language) DO UPDATE SET category = excluded.category, status = excluded.status,
       parameter_format = excluded.parameter_format, components = excluded.components, synced_at = excluded.synced_at`,
  );
  await db.batch(
    templates.map((t) =>
      stmt.bind(wabaId, t.name, t.language, t.category, t.status, t.parameterFormat, JSON.stringify(t.spec), at),
    ),
  );
}

/** Templates of the account not confirmed since `before` (the operator no longer lists them): deleted. */
export async function deleteUnconfirmed(
  db: D1Database,
  wabaId: string,
  before: string,
  name?: string,
): Promise<number> {
  const r = await db
    .prepare(
      `DELETE FROM message_templates WHERE waba_id = ? AND synced_at < ?${name === undefined ? "" : " AND name = ?"}`,
    )
    .bind(wabaId, before, ...(name === undefined ? [] : [name]))
    .run();
  return r.meta.changes;
}

/** Sets a stored template's status (the operator's status webhook), leaving its spec as synced. */
export async function setTemplateStatus(
  db: D1Database,
  wabaId: string,
  name: string,
  language: string,
  status: string,
): Promise<boolean> {
  const r = await db
    .prepare("UPDATE message_templates SET status = ? WHERE waba_id = ? AND name = ? AND language = ?")
    .bind(status, wabaId, name, language)
    .run();
  return r.meta.changes > 0;
}

/** Templates of the account confirmed since `since` (this pass's so far): ≤ 6,000, read through the key's account prefix. */
export async function countConfirmedSince(db: D1Database, wabaId: string, since: string): Promise<number> {
  const r = await db
    .prepare("SELECT COUNT(*) AS n FROM message_templates WHERE waba_id = ? AND synced_at >= ?")
    .bind(wabaId, since)
    .first<{ n: number }>();
  return r?.n ?? 0;
}

/**
 * A connected number of the workspace and its account's templates of one name, in one read:
 * null when the number is not the workspace's (or not connected).
 */
export async function numberWithTemplatesNamed(
  db: D1Database,
  workspaceId: string,
  numberId: string,
  name: string,
): Promise<{ operatorType: string; wabaId: string | null; templates: StoredTemplate[] } | null> {
  const r = await db
    .prepare(
      `SELECT n.upstream_type AS upstream_type, n.waba_id AS number_waba_id, t.*
         FROM channel_numbers n
         LEFT JOIN message_templates t ON t.waba_id = n.waba_id AND t.name = ?3
        WHERE n.id = ?1 AND n.workspace_id = ?2 AND n.status = 'connected'
        ORDER BY t.language`,
    )
    .bind(numberId, workspaceId, name)
    .all<TemplateRow & { upstream_type: string; number_waba_id: string | null }>();
  const first = r.results[0];
  if (!first) return null;
  return {
    operatorType: first.upstream_type,
    wabaId: first.number_waba_id,
    templates: stored(r.results.filter((row) => row.name !== null)),
  };
}

export interface TemplateListFilter {
  status?: string;
  category?: string;
  language?: string;
  name?: string;
}

/**
 * A page of the templates of some accounts in (name, language, account) order, strictly after
 * `after`: one keyset query through the primary key of each account (at most `limit` rows read
 * beyond the filters' misses: the filters are on the account's own rows, ≤ 6,000 of them).
 */
export async function listTemplates(
  db: D1Database,
  wabaIds: readonly string[],
  f: TemplateListFilter,
  after: { name: string; language: string; account: string } | null,
  limit: number,
): Promise<StoredTemplate[]> {
  if (wabaIds.length === 0) return [];
  const conds = [`waba_id IN (${wabaIds.map(() => "?").join(", ")})`];
  const bindings: (string | number)[] = [...wabaIds];
  for (const [col, value] of [
    ["status", f.status],
    ["category", f.category],
    ["language", f.language],
    ["name", f.name],
  ] as const) {
    if (value === undefined) continue;
    conds.push(`${col} = ?`);
    bindings.push(value);
  }
  if (after) {
    conds.push("(name, language, waba_id) > (?, ?, ?)");
    bindings.push(after.name, after.language, after.account);
  }
  const r = await db
    .prepare(`SELECT * FROM message_templates WHERE ${conds.join(" AND ")} ORDER BY name, language, waba_id LIMIT ?`)
    .bind(...bindings, limit)
    .all<TemplateRow>();
  return stored(r.results);
}

export async function getSyncState(db: D1Database, wabaId: string): Promise<SyncStateRow | null> {
  return db.prepare("SELECT * FROM template_sync_state WHERE waba_id = ?").bind(wabaId).first<SyncStateRow>();
}

export async function syncStates(db: D1Database, wabaIds: readonly string[]): Promise<Map<string, SyncStateRow>> {
  if (wabaIds.length === 0) return new Map();
  const r = await db
    .prepare(`SELECT * FROM template_sync_state WHERE waba_id IN (${wabaIds.map(() => "?").join(", ")})`)
    .bind(...wabaIds)
    .all<SyncStateRow>();
  return new Map(r.results.map((s) => [s.waba_id, s]));
}

/** Writes the given columns of an account's sync state (the row is created on first use). */
export async function putSyncState(
  db: D1Database,
  wabaId: string,
  set: Partial<Omit<SyncStateRow, "waba_id">>,
): Promise<void> {
  const cols = Object.keys(set) as (keyof typeof set)[];
  if (cols.length === 0) return;
  await db
    .prepare(
      `INSERT INTO template_sync_state (waba_id, ${cols.join(", ")}) VALUES (?, ${cols.map(() => "?").join(", ")})
       ON CONFLICT (waba_id) DO UPDATE SET ${cols.map((c) => `${c} = excluded.${c}`).join(", ")}`,
    )
    .bind(wabaId, ...cols.map((c) => set[c] ?? null))
    .run();
}

/**
 * Accounts whose templates are due a sync run, most due first: one asked for (a status webhook
 * that could not be applied), a pass in progress, then the stalest (never synced first). Only
 * accounts with a connected live number (whose token the sync uses). An account whose last try
 * failed waits an hour like one that succeeded, so that accounts failing for good never take the
 * budget of the others. Reads the accounts through the partial index on `waba_id`,
 * one entry per live number with an account, hourly. Bounded by `limit`.
 */
export async function accountsDue(db: D1Database, staleBefore: string, limit: number): Promise<string[]> {
  const r = await db
    .prepare(
      `SELECT n.waba_id AS waba_id
         FROM (SELECT DISTINCT waba_id FROM channel_numbers
                WHERE status = 'connected' AND upstream_type = 'cloud' AND waba_id IS NOT NULL) n
         LEFT JOIN template_sync_state s ON s.waba_id = n.waba_id
        WHERE s.waba_id IS NULL OR s.requested_at IS NOT NULL
           OR ((s.cursor IS NOT NULL OR s.last_success_at IS NULL OR s.last_success_at <= ?1)
               AND (s.last_error_at IS NULL OR s.last_error_at <= ?1))
        ORDER BY s.requested_at IS NULL, s.cursor IS NULL,
                 MAX(COALESCE(s.last_success_at, ''), COALESCE(s.last_error_at, ''))
        LIMIT ?2`,
    )
    .bind(staleBefore, limit)
    .all<{ waba_id: string }>();
  return r.results.map((x) => x.waba_id);
}
