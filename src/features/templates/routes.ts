import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../context";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { pageLimit } from "../../lib/pagination";
import { notFound } from "../../lib/errors";
import { now } from "../../lib/clock";
import { getConnectedNumber, listAllNumbers, type ChannelNumberRow } from "../../db/channel-numbers";
import { syncStates, type TemplateListFilter } from "./store";
import { templatePage } from "./template-page";
import { findByUuid } from "../../lib/job-id";
import { accountOf, withTokenChecked } from "./number-templates";
import { templatePosition, TemplateFilterFields } from "../../domain/template-filters";
import { TemplateView, toTemplateView, type StoredTemplate } from "../../domain/template";
import { SANDBOX_ACCOUNT } from "../../operator/sandbox-templates";

const TEMPLATE_EXAMPLE: z.output<typeof TemplateView> = {
  channelNumberIds: [EXAMPLE.channelNumberId],
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  parameterFormat: "POSITIONAL",
  header: null,
  body: { text: "Hi {{1}}, your order {{2}} has shipped and arrives on {{3}}.", parameters: ["1", "2", "3"] },
  footer: null,
  buttons: [],
  source: "operator",
  sync: { syncedAt: EXAMPLE.createdAt, ageSeconds: 1800, lastError: null, lastErrorAt: null },
};

const Filters = {
  channelNumberId: z
    .string()
    .uuid({ error: "channelNumberId must be a number id (a UUID)." })
    .optional()
    .openapi({ description: "Only the templates this number can send.", example: EXAMPLE.channelNumberId }),
  ...TemplateFilterFields,
};

const TemplateListQuery = z.object({
  ...Filters,
  limit: pageLimit(50, "Templates per page, 1–100 (default 50)."),
  cursor: z
    .string()
    .max(512)
    .optional()
    .openapi({ description: "`nextCursor` of the previous page, unchanged.", example: EXAMPLE.cursor }),
});

const TemplateList = z
  .object({ data: z.array(TemplateView), nextCursor: z.string().nullable() })
  .openapi("TemplateList");

const list = createRoute({
  method: "get",
  path: "/templates",
  "x-key-role": "viewer",
  operationId: "listTemplates",
  tags: ["Templates"],
  summary: "List the templates your numbers can send",
  description:
    "The templates of your live numbers' business accounts (synced from the operator when a number is connected, at most " +
    "hourly after that, and at once when the operator reports a template's status change) and the built-in templates of " +
    "sandbox numbers, ordered by name and language. `sync` tells how old the copy is and the account's last sync error.",
  security: bearerSecurity,
  request: { query: TemplateListQuery },
  responses: {
    200: jsonContent(TemplateList, "Templates, by name and language.", { data: [TEMPLATE_EXAMPLE], nextCursor: null }),
    ...errorResponses(400, 401, 404, 429),
  },
});

const TemplateDetail = z
  .object({
    name: z.string(),
    translations: z.array(TemplateView).openapi({ description: "Each language (and account) of the name." }),
  })
  .openapi("TemplateDetail");

const get = createRoute({
  method: "get",
  path: "/templates/{name}",
  "x-key-role": "viewer",
  operationId: "getTemplate",
  tags: ["Templates"],
  summary: "A template by name: each of its languages",
  security: bearerSecurity,
  request: {
    params: z.object({ name: z.string().min(1).max(512).openapi({ example: "order_update" }) }),
    query: z.object({ channelNumberId: Filters.channelNumberId, language: Filters.language }),
  },
  responses: {
    200: jsonContent(TemplateDetail, "The template's languages.", {
      name: "order_update",
      translations: [TEMPLATE_EXAMPLE],
    }),
    ...errorResponses(401, 404, 429),
  },
});

/** The accounts whose templates the caller sees, each with the workspace's numbers that send them. */
async function accountsOf(c: Context<AppEnv>, channelNumberId: string | undefined): Promise<Map<string, string[]>> {
  const { workspaceId } = c.get("principal");
  let numbers: ChannelNumberRow[];
  if (channelNumberId === undefined) {
    numbers = (await listAllNumbers(c.env.DB, workspaceId)).filter((n) => n.status === "connected");
  } else {
    const one = await findByUuid(channelNumberId, (id) => getConnectedNumber(c.env.DB, workspaceId, id));
    if (!one) throw notFound("Channel number");
    numbers = [one];
  }
  const accounts = new Map<string, string[]>();
  for (const n of await withTokenChecked(c.env, numbers)) {
    const account = accountOf(n);
    if (account !== null) accounts.set(account, [...(accounts.get(account) ?? []), n.id]);
  }
  return accounts;
}

async function views(c: Context<AppEnv>, templates: StoredTemplate[], accounts: Map<string, string[]>) {
  const states = await syncStates(
    c.env.DB,
    [...new Set(templates.map((t) => t.account))].filter((a) => a !== SANDBOX_ACCOUNT),
  );
  const at = now();
  return templates.map((t) => {
    const s = states.get(t.account);
    return toTemplateView(
      t,
      accounts.get(t.account) ?? [],
      s ? { lastError: s.last_error, lastErrorAt: s.last_error_at } : null,
      at,
    );
  });
}

export const templateRoutes = newRouter()
  .openapi(list, async (c) => {
    const q = c.req.valid("query");
    const after = templatePosition(q.cursor);
    const accounts = await accountsOf(c, q.channelNumberId);
    const filter: TemplateListFilter = {
      ...(q.status ? { status: q.status } : {}),
      ...(q.category ? { category: q.category } : {}),
      ...(q.language ? { language: q.language } : {}),
    };
    const page = await templatePage(c.env.DB, [...accounts.keys()], filter, after, q.limit);
    return c.json({ data: await views(c, page.templates, accounts), nextCursor: page.nextCursor }, 200);
  })
  .openapi(get, async (c) => {
    const { name } = c.req.valid("param");
    const q = c.req.valid("query");
    const accounts = await accountsOf(c, q.channelNumberId);
    // One name has a handful of languages per account: one bounded read.
    const { templates: rows } = await templatePage(
      c.env.DB,
      [...accounts.keys()],
      { name, ...(q.language ? { language: q.language } : {}) },
      null,
      100,
    );
    if (rows.length === 0) throw notFound("Template");
    return c.json({ name, translations: await views(c, rows, accounts) }, 200);
  });
