import type { ChannelNumberRow } from "../../db/channel-numbers";
import {
  countConfirmedSince,
  deleteUnconfirmed,
  getSyncState,
  putSyncState,
  setTemplateStatus,
  upsertTemplates,
  type TemplateWrite,
} from "./store";
import { isoNow } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { openOperatorCredentials } from "../../lib/sealed-secrets";
import { fetchTemplatePageAs } from "../../operator/templates";
import { OperatorTemplateUpdate } from "../../operator/webhook-payload";
import { MAX_SPEC_BYTES, normalizeTemplate, TEMPLATE_STATUSES, type OperatorTemplate } from "../../domain/template";

/** A business account's templates are fetched again at most this often (the status webhook keeps them current between). */
export const TEMPLATE_SYNC_INTERVAL_MS = 60 * 60 * 1000;
/** The operator's own maximum per account (a verified business; 250 otherwise): we store no more. */
export const MAX_TEMPLATES_PER_ACCOUNT = 6_000;
/** Pages fetched in the connect request itself: an account of up to 300 templates is ready at once. */
export const CONNECT_PAGE_BUDGET = 3;

const ERROR_CHARS = 300;

/**
 * A connected live number of the account whose token the operator has not refused: its token reads
 * the account's templates (the account's numbers share them). A workspace sees them only while its
 * own token is honoured (number-templates.ts), so a token that still works elsewhere never shows
 * them to a workspace whose own token was revoked.
 */
async function tokenOf(env: Env, wabaId: string): Promise<{ numberId: string; token: string } | null> {
  const row = await env.DB.prepare(
    `SELECT * FROM channel_numbers WHERE waba_id = ? AND status = 'connected' AND upstream_type = 'cloud'
        AND unverified_since IS NULL
      ORDER BY created_at LIMIT 1`,
  )
    .bind(wabaId)
    .first<ChannelNumberRow>();
  return row ? { numberId: row.id, token: (await openOperatorCredentials(env, row)).accessToken } : null;
}

/** The templates of a page we can store: readable, with a body, within the spec bound. */
function storable(templates: readonly OperatorTemplate[]): { rows: TemplateWrite[]; skipped: number } {
  const rows: TemplateWrite[] = [];
  let skipped = 0;
  for (const t of templates) {
    const n = normalizeTemplate(t);
    if (n && new TextEncoder().encode(JSON.stringify(n.spec)).length <= MAX_SPEC_BYTES) rows.push(n);
    else skipped++;
  }
  return { rows, skipped };
}

export interface SyncRun {
  pages: number;
  /** The pass reached the operator's last page (or the account has no live number left). */
  done: boolean;
  ok: boolean;
}

/**
 * Goes on with the account's sync pass for at most `pageBudget` pages: from the stored cursor (a
 * pass in progress) or from the first page. Each page's templates are stored as they come; when
 * the last page is reached, templates the pass did not confirm (deleted at the operator) are
 * deleted. A failure records its reason and time and changes no template: the last good copy
 * stays, and the next run resumes from the same cursor.
 */
export async function syncAccount(env: Env, wabaId: string, pageBudget: number): Promise<SyncRun> {
  const reader = await tokenOf(env, wabaId);
  if (!reader) {
    await putSyncState(env.DB, wabaId, { cursor: null, pass_started_at: null, requested_at: null });
    return { pages: 0, done: true, ok: true };
  }
  const state = await getSyncState(env.DB, wabaId);
  let cursor = state?.cursor ?? null;
  const passStartedAt = (cursor !== null ? state?.pass_started_at : null) ?? isoNow();
  const problems: string[] = [];
  let pages = 0;
  while (pages < pageBudget) {
    const page = await fetchTemplatePageAs(env, wabaId, reader, { after: cursor });
    pages++;
    if (!page.ok) {
      log("warn", "template sync failed; the last synced templates are kept", { wabaId, pages });
      await putSyncState(env.DB, wabaId, {
        last_error: page.reason.slice(0, ERROR_CHARS),
        last_error_at: isoNow(),
        cursor,
        pass_started_at: passStartedAt,
        requested_at: null,
      });
      return { pages, done: false, ok: false };
    }
    const { rows, skipped } = storable(page.templates);
    if (skipped + page.unreadable > 0)
      problems.push(
        `${skipped + page.unreadable} template(s) of no usable shape or over ${MAX_SPEC_BYTES} bytes were skipped.`,
      );
    const room = MAX_TEMPLATES_PER_ACCOUNT - (await countConfirmedSince(env.DB, wabaId, passStartedAt));
    const kept = rows.slice(0, Math.max(0, room));
    await upsertTemplates(env.DB, wabaId, kept, isoNow());
    cursor = page.after;
    if (kept.length < rows.length) {
      problems.push(`The account lists more than ${MAX_TEMPLATES_PER_ACCOUNT} templates; only the first are kept.`);
      cursor = null;
    }
    if (cursor === null) {
      const deleted = await deleteUnconfirmed(env.DB, wabaId, passStartedAt);
      const at = isoNow();
      await putSyncState(env.DB, wabaId, {
        last_success_at: at,
        last_error: problems.length > 0 ? problems.join(" ").slice(0, ERROR_CHARS) : null,
        last_error_at: problems.length > 0 ? at : null,
        cursor: null,
        pass_started_at: null,
        requested_at: null,
      });
      log("info", "template sync pass complete", { wabaId, pages, deleted });
      return { pages, done: true, ok: true };
    }
  }
  // Out of budget: the next run resumes here.
  await putSyncState(env.DB, wabaId, { cursor, pass_started_at: passStartedAt, requested_at: null });
  return { pages, done: false, ok: true };
}

/**
 * The first sync of a newly connected number's account, in the connect request: a few pages at
 * once, the rest by the scheduled job (asked for here). Never fails the connect.
 */
export async function syncOnConnect(env: Env, wabaId: string): Promise<void> {
  try {
    await putSyncState(env.DB, wabaId, { requested_at: isoNow() });
    await syncAccount(env, wabaId, CONNECT_PAGE_BUDGET);
  } catch (err) {
    log("warn", "template sync at connect failed; the scheduled job retries", { wabaId, detail: errorText(err) });
  }
}

/**
 * The operator's `message_template_status_update`: every language of that template is fetched
 * again at once (one call; a new approval brings its components, a deletion removes it). If the
 * operator cannot be asked, the webhook's own status is applied to the stored language and the
 * account is due a full sync at the next run.
 */
export async function syncTemplateNamed(
  env: Env,
  wabaId: string,
  update: { name: string; language: string | null; status: string | null },
): Promise<void> {
  const reader = await tokenOf(env, wabaId);
  if (!reader) {
    log("info", "template update for an account without a live number; ignored", { wabaId });
    return;
  }
  const page = await fetchTemplatePageAs(env, wabaId, reader, { name: update.name });
  const at = isoNow();
  if (page.ok) {
    // The operator's name filter may match more than the name: only that name is ours to refresh.
    const { rows } = storable(page.templates.filter((t) => t.name === update.name));
    await upsertTemplates(env.DB, wabaId, rows, at);
    await deleteUnconfirmed(env.DB, wabaId, at, update.name);
    return;
  }
  if (update.language && update.status)
    await setTemplateStatus(env.DB, wabaId, update.name, update.language, update.status);
  await putSyncState(env.DB, wabaId, {
    last_error: page.reason.slice(0, ERROR_CHARS),
    last_error_at: at,
    requested_at: at,
  });
}

/** The stored status a webhook event stands for (used only when the operator cannot be asked). */
const statusOfEvent = (event: string): string | null =>
  event === "REINSTATED" || event === "UNARCHIVED"
    ? "APPROVED"
    : (TEMPLATE_STATUSES as readonly string[]).includes(event)
      ? event
      : null;

/** Applies one `message_template_status_update` item (operator-webhook-events.ts); a malformed one is logged and dropped. */
export async function applyTemplateUpdate(env: Env, wabaId: string | null, raw: unknown): Promise<void> {
  const parsed = OperatorTemplateUpdate.safeParse(raw);
  if (!parsed.success || wabaId === null) {
    log("warn", "operator template update not understood; dropped", {
      wabaId,
      issues: parsed.success ? 0 : parsed.error.issues.length,
    });
    return;
  }
  const u = parsed.data;
  log("info", "operator template update", { wabaId, event: u.event });
  await syncTemplateNamed(env, wabaId, {
    name: u.message_template_name,
    language: u.message_template_language ?? null,
    status: statusOfEvent(u.event.toUpperCase()),
  });
}
