import { z } from "zod";
import type { ConfigVars } from "../config";
import { OperatorTemplate } from "../domain/template";
import { call, operatorReason, isTokenRefusal } from "./account";
import { tokenRefused } from "../db/channel-numbers";

/** Templates per page asked of the operator (its Graph API pages by `limit` and an `after` cursor). */
export const TEMPLATE_PAGE_SIZE = 100;
const FIELDS = "name,language,status,category,parameter_format,components";

// A page of `GET /{waba-id}/message_templates`: `data`, and `paging.cursors.after` with
// `paging.next` present while more pages follow. Each template is read on its own.
const Page = z.looseObject({
  data: z.array(z.unknown()),
  paging: z
    .looseObject({
      cursors: z.looseObject({ after: z.string().max(512).optional() }).optional(),
      next: z.string().optional(),
    })
    .optional(),
});

export type TemplatePage =
  | { ok: true; templates: OperatorTemplate[]; unreadable: number; after: string | null }
  /** `tokenRefused`: the operator refused the token itself (HTTP 401 or code 190). */
  | { ok: false; reason: string; tokenRefused?: boolean };

/**
 * One page of an account's templates, after the operator's cursor `after` (the first page
 * without), or every language of one template (`name`). The token is sent in a header only.
 */
export async function fetchTemplatePage(
  env: ConfigVars,
  wabaId: string,
  token: string,
  opts: { after?: string | null; name?: string } = {},
): Promise<TemplatePage> {
  const query = new URLSearchParams({ fields: FIELDS, limit: String(TEMPLATE_PAGE_SIZE) });
  if (opts.after) query.set("after", opts.after);
  if (opts.name !== undefined) query.set("name", opts.name);
  const answer = await call(env, "GET", `${wabaId}/message_templates?${query.toString()}`, token);
  if (!answer) return { ok: false, reason: "The operator could not be reached." };
  if (!answer.res.ok)
    return {
      ok: false,
      reason: `The operator answered ${operatorReason(answer.res, answer.body)}.`,
      tokenRefused: isTokenRefusal(answer.res, answer.body),
    };
  const page = Page.safeParse(answer.body);
  if (!page.success) return { ok: false, reason: "The operator's answer was not a page of templates." };
  const templates: OperatorTemplate[] = [];
  let unreadable = 0;
  for (const raw of page.data.data) {
    const t = OperatorTemplate.safeParse(raw);
    if (t.success) templates.push(t.data);
    else unreadable++;
  }
  const after = page.data.paging?.next ? (page.data.paging.cursors?.after ?? null) : null;
  return { ok: true, templates, unreadable, after };
}

/**
 * A page read with a connected number's token (`reader`): a refusal of the token itself marks that
 * number's binding unverified (domain/number-binding.ts), so the next sync reads with another one.
 */
export async function fetchTemplatePageAs(
  env: Env,
  wabaId: string,
  reader: { numberId: string; token: string },
  opts: { after?: string | null; name?: string } = {},
): Promise<TemplatePage> {
  const page = await fetchTemplatePage(env, wabaId, reader.token, opts);
  if (!page.ok && page.tokenRefused)
    await tokenRefused(env.DB, reader.numberId, `The operator refused this token to a template sync (${page.reason})`);
  return page;
}
