import { Hono } from "hono";
import type { Context } from "hono";
import { getConnectedNumber, type ChannelNumberRow } from "../../db/channel-numbers";
import { getSyncState, type SyncStateRow } from "./store";
import { templatePage } from "./template-page";
import { findByUuid } from "../../lib/job-id";
import { accountOf, withTokenChecked } from "./number-templates";
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES, type StoredTemplate } from "../../domain/template";
import { templatePosition, TemplateFilters, type TemplatePosition } from "../../domain/template-filters";
import { now } from "../../lib/clock";
import { SANDBOX_ACCOUNT } from "../../operator/sandbox-templates";
import { auditMember } from "../audit/member-audit";
import { Choice, describedBy, FieldError, Time } from "../../dashboard/components";
import type { DashboardEnv } from "../../dashboard/context";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { hasRole, requireRole } from "../../dashboard/roles";
import { SendJson, StatusBadge, TemplatePreview, TestSendForm, type TestFormState } from "./template-parts";
import { formKey, sendTemplateTest } from "./test-send";
import { notFoundPage } from "../../dashboard/pages/errors";

// A number's templates (`/dashboard/numbers/:id/templates`): what `GET /api/v2/templates`
// shows, listed by the same use case (template-page.ts), with the JSON to send each and, for developers and owners, a
// form that sends one as a test through the same checks and engine as `POST /api/v2/messages`.

const PAGE_SIZE = 50;

/** The session's connected number of the `:id` in the path, or null (404 like an unknown one). */
const numberOfPath = (c: Context<DashboardEnv>) =>
  findByUuid(c.req.param("id") ?? "", (stored) => getConnectedNumber(c.env.DB, c.get("session").workspace_id, stored));

interface TemplatesOfNumber {
  templates: StoredTemplate[];
  nextCursor: string | null;
  /** The live account's sync state (null for sandbox numbers, or an account never synced). */
  sync: SyncStateRow | null;
}

/** A page of the number's templates, by name and language: built-in for sandbox numbers, synced for live ones. */
async function templatesOf(
  db: D1Database,
  number: ChannelNumberRow,
  cursor: string | undefined,
  filter: TemplateFilters,
): Promise<TemplatesOfNumber> {
  const after = positionOrFirstPage(cursor);
  if (number.upstream_type === "sandbox")
    return { ...(await templatePage(db, [SANDBOX_ACCOUNT], filter, after, PAGE_SIZE)), sync: null };
  const account = accountOf(number);
  if (account === null) return { templates: [], nextCursor: null, sync: null };
  const [page, sync] = await Promise.all([
    templatePage(db, [account], filter, after, PAGE_SIZE),
    getSyncState(db, account),
  ]);
  return { ...page, sync };
}

type FilterErrors = Partial<Record<keyof TemplateFilters, string>>;

/**
 * The page's filters from its query string, read by the API's own schema (GET /api/v2/templates
 * accepts and refuses the same values); an empty field means "any".
 */
function filtersOf(c: Context<DashboardEnv>): { values: TemplateFilters; errors: FilterErrors } {
  const raw = Object.fromEntries(
    (["status", "category", "language"] as const).flatMap((f) => {
      const v = c.req.method === "GET" ? c.req.query(f)?.trim() : undefined;
      return v ? [[f, v]] : [];
    }),
  );
  const parsed = TemplateFilters.safeParse(raw);
  if (parsed.success) return { values: parsed.data, errors: {} };
  const errors: FilterErrors = {};
  for (const issue of parsed.error.issues) {
    const field = issue.path[0];
    if ((field === "status" || field === "category" || field === "language") && !errors[field])
      errors[field] = issue.message;
  }
  return { values: raw, errors };
}

/** The page with these filters (and a page position), for links. */
function pageHref(numberId: string, filter: TemplateFilters, cursor?: string): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v) params.set(k, v);
  if (cursor) params.set("cursor", cursor);
  const q = params.toString();
  return `/dashboard/numbers/${numberId}/templates${q ? `?${q}` : ""}`;
}

function FilterForm({
  number,
  values,
  errors,
}: {
  number: ChannelNumberRow;
  values: TemplateFilters;
  errors: FilterErrors;
}) {
  const anyOr = (options: readonly string[]): [string, string][] => [
    ["", "Any"],
    ...options.map((o): [string, string] => [o, o]),
  ];
  return (
    <form
      method="get"
      action={`/dashboard/numbers/${number.id}/templates`}
      class="filters card"
      aria-label="Filter templates"
    >
      <Choice field="status" label="Status" options={anyOr(TEMPLATE_STATUSES)} values={values} errors={errors} />
      <Choice field="category" label="Category" options={anyOr(TEMPLATE_CATEGORIES)} values={values} errors={errors} />
      <div class="field">
        <label for="f-language">Language</label>
        <input
          id="f-language"
          name="language"
          type="text"
          autocomplete="off"
          maxlength={16}
          placeholder="en_US"
          value={values.language ?? ""}
          {...describedBy("language", errors)}
        />
        <FieldError field="language" message={errors.language} />
      </div>
      <div class="actions">
        <button type="submit">Apply filters</button> <a href={`/dashboard/numbers/${number.id}/templates`}>Clear</a>
      </div>
    </form>
  );
}

/** "12 minutes ago", "3 hours ago", "2 days ago": how old a copy is, at a glance. */
export function ageOf(iso: string, at: number): string {
  const minutes = Math.max(0, Math.floor((at - Date.parse(iso)) / 60_000));
  if (minutes < 1) return "less than a minute ago";
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? "" : "s"} ago`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} hours ago` : `${Math.floor(hours / 24)} days ago`;
}

/** Where the account's copy comes from, how old it is, and its last sync error. */
function SyncFacts({ number, sync }: { number: ChannelNumberRow; sync: SyncStateRow | null }) {
  if (number.upstream_type === "sandbox")
    return (
      <p>
        A sandbox number has these built-in templates (they are never synced). Like the operator, it delivers a template
        to any recipient, also outside the 24-hour window where it refuses free-form text.
      </p>
    );
  if (number.waba_id === null)
    return (
      <p class="problem">
        This number was connected without its business account id (<code>wabaId</code>): it has no templates, and
        template sends are refused with <code>template_not_found</code>. An owner can reconnect it with its business
        account id.
      </p>
    );
  const at = now();
  return (
    <dl class="facts">
      <dt>Business account</dt>
      <dd>
        <code>{number.waba_id}</code>
      </dd>
      <dt>Last synced</dt>
      <dd>
        {sync?.last_success_at ? (
          <>
            <Time iso={sync.last_success_at} /> <span class="hint">({ageOf(sync.last_success_at, at)})</span>
          </>
        ) : (
          "not yet"
        )}{" "}
        <span class="hint">
          · copied from the operator when the number is connected, at most hourly after that, and at once when the
          operator reports a status change
        </span>
      </dd>
      <dt>Last sync error</dt>
      <dd>
        {sync?.last_error ? (
          <span class="bad">
            {sync.last_error}
            {sync.last_error_at ? (
              <>
                {" "}
                (<Time iso={sync.last_error_at} />)
              </>
            ) : null}{" "}
            · the last good copy below is kept
          </span>
        ) : (
          "none"
        )}
      </dd>
    </dl>
  );
}

function TemplateCard({
  t,
  index,
  number,
  canSend,
  form,
}: {
  t: StoredTemplate;
  index: number;
  number: ChannelNumberRow;
  canSend: boolean;
  form: TestFormState | undefined;
}) {
  const prefix = `t${index}`;
  return (
    <article class="card template" aria-labelledby={`${prefix}-heading`}>
      <h2 id={`${prefix}-heading`}>
        {t.name} <span class="hint">({t.language})</span> <StatusBadge status={t.status} />
      </h2>
      <dl class="facts">
        <dt>Category</dt>
        <dd>{t.category}</dd>
        <dt>Language</dt>
        <dd>
          <code>{t.language}</code>
        </dd>
        <dt>Parameter format</dt>
        <dd>
          {t.parameterFormat}{" "}
          <span class="hint">
            {t.parameterFormat === "NAMED"
              ? "(values sent as an object, by name)"
              : "(values sent as an array, in order)"}
          </span>
        </dd>
        {t.syncedAt ? (
          <>
            <dt>Confirmed by the operator</dt>
            <dd>
              <Time iso={t.syncedAt} />
            </dd>
          </>
        ) : null}
      </dl>
      <TemplatePreview t={t} />
      <SendJson t={t} channelNumberId={number.id} id={`${prefix}-json`} />
      {t.status === "APPROVED" ? (
        canSend ? (
          <TestSendForm t={t} numberId={number.id} prefix={prefix} state={form} />
        ) : null
      ) : (
        <p class="hint">
          Only APPROVED templates can be sent: a send of this one is refused with{" "}
          <code>{t.status === "PAUSED" ? "template_paused" : "template_not_approved"}</code>.
        </p>
      )}
    </article>
  );
}

/** The API's cursor; a damaged one starts from the first page, as the other dashboard lists do. */
function positionOrFirstPage(cursor: string | undefined): TemplatePosition | null {
  try {
    return templatePosition(cursor);
  } catch {
    return null;
  }
}

/** The Templates page of a number; `form` re-renders a refused test send with its errors. */
export async function renderTemplates(c: Context<DashboardEnv>, number: ChannelNumberRow, form?: TestFormState) {
  const { role } = c.get("session");
  const cursor = c.req.method === "GET" ? c.req.query("cursor") : undefined;
  const filters = filtersOf(c);
  const refused = Object.keys(filters.errors).length > 0;
  // A filter the API would refuse: the form says why beside the field, and no list is shown.
  const { templates, nextCursor, sync } = refused
    ? { templates: [], nextCursor: null, sync: number.waba_id ? await getSyncState(c.env.DB, number.waba_id) : null }
    : await templatesOf(c.env.DB, (await withTokenChecked(c.env, [number]))[0] ?? number, cursor, filters.values);
  if (refused) c.status(400);
  const filtered = Object.keys(filters.values).length > 0;
  const canSend = hasRole(role, "developer");
  return c.render(
    <>
      <p class="crumbs">
        <a href="/dashboard/numbers">Numbers</a> /{" "}
        <a href={`/dashboard/numbers/${number.id}`}>{number.display_phone_number}</a> /
      </p>
      <h1>Templates of {number.display_phone_number}</h1>
      <p>
        Outside the 24-hour customer-service window the operator delivers only a template: a text with placeholders,
        approved by the operator for the number's business account. Send one through <code>POST /api/v2/messages</code>{" "}
        with <code>type: "template"</code>.
      </p>
      <SyncFacts number={number} sync={sync} />
      {form && !templates.some((t) => t.status === "APPROVED" && formKey(t) === form.key) ? (
        // A refused send of a template that has no form here (paused or removed since the page was shown).
        <p class="form-error" role="alert">
          {form.message}
        </p>
      ) : null}
      {!canSend ? (
        <p class="hint">Developers and owners of the workspace can send a test of an approved template.</p>
      ) : null}
      {number.upstream_type === "sandbox" || number.waba_id !== null ? (
        <FilterForm number={number} values={filters.values} errors={filters.errors} />
      ) : null}
      {refused ? null : templates.length === 0 ? (
        filtered ? (
          <p>No template matches these filters.</p>
        ) : number.waba_id !== null ? (
          <p>No template yet: templates created and approved in the operator's business manager appear here.</p>
        ) : null
      ) : (
        templates.map((t, i) => (
          <TemplateCard
            t={t}
            index={i}
            number={number}
            canSend={canSend}
            form={form && form.key === formKey(t) ? form : undefined}
          />
        ))
      )}
      {nextCursor ? (
        <p>
          <a href={pageHref(number.id, filters.values, nextCursor)}>Next page</a>
        </p>
      ) : null}
    </>,
    { title: `Templates of ${number.display_phone_number}` },
  );
}

export const templatePages = new Hono<DashboardEnv>()
  .get("/numbers/:id/templates", async (c) => {
    const number = await numberOfPath(c);
    if (!number) return notFoundPage(c);
    return renderTemplates(c, number);
  })
  .post("/numbers/:id/templates/test", requireRole("developer"), async (c) => {
    const session = c.get("session");
    const number = await numberOfPath(c);
    if (!number) return notFoundPage(c);
    const fields = await formFields(c);
    const name = fields.name ?? "";
    const language = fields.language ?? "";
    const result = await sendTemplateTest(c.env, {
      workspaceId: session.workspace_id,
      channelNumberId: number.id,
      name,
      language,
      fields,
    });
    if (!result.ok) {
      c.status(result.status);
      // What was typed comes back in the fields; the hidden ones are the form's own.
      const values = Object.fromEntries(
        Object.entries(fields).filter(([k]) => !["idempotencyKey", "name", "language"].includes(k)),
      );
      return renderTemplates(c, number, {
        key: formKey({ name, language }),
        values,
        fieldErrors: result.fieldErrors,
        message: result.message,
        idempotencyKey: result.idempotencyKey,
      });
    }
    // A member's send is audited like their other actions: which template, never the recipient or the values.
    if (!result.duplicate)
      await auditMember(c, {
        action: "template.test_sent",
        target: { type: "channel_number", id: number.id },
        detail: `${name} (${language})`,
      });
    const notice = result.duplicate
      ? `This test of ${name} (${language}) was already sent; nothing was sent again.`
      : `Test of ${name} (${language}) queued. Its status follows below.`;
    await setFlash(c, { notice }, session.token_hash);
    return c.redirect(`/dashboard/messages/${result.jobId}`, 303);
  });
