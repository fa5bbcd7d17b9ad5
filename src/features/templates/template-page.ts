import type { StoredTemplate } from "../../domain/template";
import { matchesTemplate, templateCursor, type TemplatePosition } from "../../domain/template-filters";
import { SANDBOX_ACCOUNT, SANDBOX_TEMPLATES } from "../../operator/sandbox-templates";
import { listTemplates, type TemplateListFilter } from "./store";

export interface TemplatePage {
  /** At most `limit` templates, by name, language and account. */
  templates: StoredTemplate[];
  /** The cursor of the page after this one; null on the last page. */
  nextCursor: string | null;
}

const positionOf = (t: StoredTemplate): TemplatePosition => ({
  name: t.name,
  language: t.language,
  account: t.account,
});

// The store's ORDER BY name, language, waba_id, so that built-in and stored templates interleave
// as one list and a cursor means the same place in both.
const compare = (a: TemplatePosition, b: TemplatePosition): number =>
  a.name !== b.name
    ? a.name < b.name
      ? -1
      : 1
    : a.language !== b.language
      ? a.language < b.language
        ? -1
        : 1
      : a.account < b.account
        ? -1
        : a.account > b.account
          ? 1
          : 0;

/**
 * A page of the templates of `accounts` (business account ids; `SANDBOX_ACCOUNT` for the sandbox's
 * built-in templates) that pass `filter`, strictly after `after`: the one listing of
 * GET /api/v2/templates and of a number's Templates page in the dashboard, so both show the same
 * templates in the same order and page at the same places.
 */
export async function templatePage(
  db: D1Database,
  accounts: readonly string[],
  filter: TemplateListFilter,
  after: TemplatePosition | null,
  limit: number,
): Promise<TemplatePage> {
  // One more than the page: whether it exists says whether there is a next page.
  const wanted = limit + 1;
  const stored = await listTemplates(
    db,
    accounts.filter((a) => a !== SANDBOX_ACCOUNT),
    filter,
    after,
    wanted,
  );
  const builtIn = accounts.includes(SANDBOX_ACCOUNT)
    ? SANDBOX_TEMPLATES.filter(
        (t) => matchesTemplate(t, filter) && (after === null || compare(positionOf(t), after) > 0),
      )
    : [];
  const rows = [...stored, ...builtIn].sort((a, b) => compare(positionOf(a), positionOf(b))).slice(0, wanted);
  const templates = rows.slice(0, limit);
  const last = templates.at(-1);
  return { templates, nextCursor: rows.length > limit && last ? templateCursor(last) : null };
}
