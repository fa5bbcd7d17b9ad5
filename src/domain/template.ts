import { z } from "@hono/zod-openapi";

// A message template as we keep it: the operator's key (account, name, language), its review
// state, and a normalized spec of its components (what a send must fill in, and the text the
// recipient reads). Stored in D1 (src/features/templates/store.ts) for live numbers, built into the
// code for sandbox numbers (src/operator/sandbox-templates.ts).

export const TEMPLATE_CATEGORIES = ["MARKETING", "UTILITY", "AUTHENTICATION"] as const;
/** The operator's review states; only APPROVED templates can be sent. */
export const TEMPLATE_STATUSES = [
  "APPROVED",
  "PENDING",
  "REJECTED",
  "PAUSED",
  "DISABLED",
  "IN_APPEAL",
  "PENDING_DELETION",
  "ARCHIVED",
  "LIMIT_EXCEEDED",
] as const;
export const PARAMETER_FORMATS = ["POSITIONAL", "NAMED"] as const;
export type ParameterFormat = (typeof PARAMETER_FORMATS)[number];

/** A header's kind: text (with at most one placeholder) or a media the send supplies. */
export const HEADER_FORMATS = ["TEXT", "IMAGE", "VIDEO", "DOCUMENT", "LOCATION"] as const;
export type HeaderFormat = (typeof HEADER_FORMATS)[number];

/** Our normalized components: placeholders listed once each, in order (`1`, `2`… or names). */
export const TemplateSpec = z.object({
  header: z
    .object({ format: z.enum(HEADER_FORMATS), text: z.string().nullable(), params: z.array(z.string()) })
    .nullable(),
  body: z.object({ text: z.string(), params: z.array(z.string()) }),
  footer: z.string().nullable(),
  buttons: z.array(
    z.object({
      index: z.number().int().min(0),
      type: z.string(),
      text: z.string(),
      /** The URL of a URL button (its `{{1}}` is the send's value). */
      url: z.string().nullable(),
      params: z.array(z.string()),
    }),
  ),
});
export type TemplateSpec = z.infer<typeof TemplateSpec>;

/** A template as the store answers it (one language of one name of one account). */
export interface StoredTemplate {
  /** The business account id, or `sandbox` for the built-in templates of sandbox numbers. */
  account: string;
  name: string;
  language: string;
  category: string;
  status: string;
  parameterFormat: ParameterFormat;
  spec: TemplateSpec;
  /** When the operator last confirmed it (null for built-in templates). */
  syncedAt: string | null;
}

/** The stored spec bound (bytes of its JSON): a larger template is skipped by the sync and reported. */
export const MAX_SPEC_BYTES = 8 * 1024;

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;

/** Each placeholder of a text once, in order of first appearance; positional ones sorted by number. */
export function placeholdersOf(text: string, format: ParameterFormat): string[] {
  const seen: string[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) if (!seen.includes(m[1]!)) seen.push(m[1]!);
  return format === "POSITIONAL" ? seen.sort((a, b) => Number(a) - Number(b)) : seen;
}

/** Fills a text's placeholders; a value missing from `values` leaves its placeholder as it was. */
export function fill(text: string, values: ReadonlyMap<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, key: string) => values.get(key) ?? whole);
}

// The operator's template, as far as we read it (GET /{waba-id}/message_templates). Unknown
// fields pass through unread; a template of no readable shape is skipped by the sync, never fatal.
const OperatorButton = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  url: z.string().optional(),
});
const OperatorComponent = z.looseObject({
  type: z.string(),
  format: z.string().optional(),
  text: z.string().optional(),
  buttons: z.array(OperatorButton).optional(),
});
export const OperatorTemplate = z.looseObject({
  name: z.string().min(1).max(512),
  language: z.string().min(1).max(20),
  status: z.string().min(1).max(40),
  category: z.string().min(1).max(40),
  parameter_format: z.string().optional(),
  components: z.array(OperatorComponent).default([]),
});
export type OperatorTemplate = z.infer<typeof OperatorTemplate>;

/** The operator's template as we store it; null when it has no body (nothing we can send). */
export function normalizeTemplate(t: OperatorTemplate): Omit<StoredTemplate, "account" | "syncedAt"> | null {
  const parameterFormat: ParameterFormat = t.parameter_format?.toUpperCase() === "NAMED" ? "NAMED" : "POSITIONAL";
  const find = (type: string) => t.components.find((c) => c.type.toUpperCase() === type);
  const body = find("BODY");
  if (!body?.text) return null;
  const header = find("HEADER");
  const headerFormat = (HEADER_FORMATS as readonly string[]).includes(header?.format?.toUpperCase() ?? "")
    ? (header!.format!.toUpperCase() as HeaderFormat)
    : "TEXT";
  const spec: TemplateSpec = {
    header: header
      ? {
          format: headerFormat,
          text: headerFormat === "TEXT" ? (header.text ?? "") : null,
          params: headerFormat === "TEXT" ? placeholdersOf(header.text ?? "", parameterFormat) : [],
        }
      : null,
    body: { text: body.text, params: placeholdersOf(body.text, parameterFormat) },
    footer: find("FOOTER")?.text ?? null,
    buttons: (find("BUTTONS")?.buttons ?? []).map((b, index) => ({
      index,
      type: b.type.toUpperCase(),
      text: b.text ?? "",
      url: b.url ?? null,
      // A URL button's `{{1}}` is the only button value the operator takes as text.
      params: b.type.toUpperCase() === "URL" && b.url ? placeholdersOf(b.url, "POSITIONAL") : [],
    })),
  };
  return {
    name: t.name,
    language: t.language,
    category: t.category.toUpperCase(),
    status: t.status.toUpperCase(),
    parameterFormat,
    spec,
  };
}

// What the API shows of a template.
export const TemplateView = z
  .object({
    channelNumberIds: z.array(z.string().uuid()).openapi({
      description:
        "The workspace's numbers that can send it (templates belong to a number's business account; each sandbox number has the built-in ones).",
    }),
    name: z.string().openapi({ example: "order_update" }),
    language: z.string().openapi({ example: "en_US", description: "The operator's language and locale code." }),
    category: z.string().openapi({ example: "UTILITY", description: "`MARKETING`, `UTILITY` or `AUTHENTICATION`." }),
    status: z.string().openapi({
      example: "APPROVED",
      description: `The operator's review state: ${TEMPLATE_STATUSES.map((s) => `\`${s}\``).join(", ")}. Only \`APPROVED\` templates can be sent.`,
    }),
    parameterFormat: z.enum(PARAMETER_FORMATS).openapi({
      description:
        "`POSITIONAL`: placeholders `{{1}}`, `{{2}}`…, sent as an array. `NAMED`: placeholders `{{first_name}}`…, sent as an object.",
    }),
    header: z
      .object({
        format: z.enum(HEADER_FORMATS),
        text: z.string().nullable(),
        parameters: z.array(z.string()).openapi({ description: "Its placeholders (at most one)." }),
      })
      .nullable()
      .openapi({
        description:
          "A `TEXT` header's placeholder is sent as `parameters.header` (a string); an `IMAGE`, `VIDEO` or `DOCUMENT` header needs `parameters.header: {link}`.",
      }),
    body: z.object({
      text: z.string().openapi({ example: "Hi {{1}}, your order {{2}} has shipped." }),
      parameters: z.array(z.string()).openapi({ example: ["1", "2"], description: "Its placeholders, in order." }),
    }),
    footer: z.string().nullable(),
    buttons: z.array(
      z.object({
        index: z.number().int(),
        type: z.string().openapi({ example: "URL" }),
        text: z.string(),
        parameters: z.array(z.string()).openapi({
          description: "A URL button's placeholder, sent as `parameters.buttons: [{index, value}]`.",
        }),
      }),
    ),
    source: z.enum(["operator", "sandbox"]).openapi({
      description: "`operator`: synced from the business account. `sandbox`: built into sandbox numbers.",
    }),
    sync: z
      .object({
        syncedAt: z.string().datetime().nullable().openapi({ description: "When the operator last confirmed it." }),
        ageSeconds: z.number().int().nullable().openapi({ description: "Seconds since `syncedAt`." }),
        lastError: z.string().nullable().openapi({
          description:
            "The last failed sync of the account, kept until a sync succeeds; the template is then shown as last synced.",
        }),
        lastErrorAt: z.string().datetime().nullable(),
      })
      .nullable()
      .openapi({ description: "Null for sandbox templates." }),
  })
  .openapi("Template");
export type TemplateView = z.infer<typeof TemplateView>;

/** The account-level sync facts a view shows beside each template. */
export interface SyncFacts {
  lastError: string | null;
  lastErrorAt: string | null;
}

export function toTemplateView(
  t: StoredTemplate,
  channelNumberIds: string[],
  sync: SyncFacts | null,
  at: number,
): TemplateView {
  return {
    channelNumberIds,
    name: t.name,
    language: t.language,
    category: t.category,
    status: t.status,
    parameterFormat: t.parameterFormat,
    header: t.spec.header
      ? { format: t.spec.header.format, text: t.spec.header.text, parameters: t.spec.header.params }
      : null,
    body: { text: t.spec.body.text, parameters: t.spec.body.params },
    footer: t.spec.footer,
    buttons: t.spec.buttons.map((b) => ({ index: b.index, type: b.type, text: b.text, parameters: b.params })),
    source: t.account === "sandbox" ? "sandbox" : "operator",
    sync:
      t.account === "sandbox"
        ? null
        : {
            syncedAt: t.syncedAt,
            ageSeconds: t.syncedAt ? Math.max(0, Math.floor((at - Date.parse(t.syncedAt)) / 1000)) : null,
            lastError: sync?.lastError ?? null,
            lastErrorAt: sync?.lastErrorAt ?? null,
          },
  };
}
