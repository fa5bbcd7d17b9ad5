import { MessageListQuery } from "../messages/list";

/**
 * The messages page's GET form, read into the API's own list query
 * (`MessageListQuery`), so the page accepts and refuses exactly what
 * `GET /api/v1/messages` does. The form's fields carry the API's parameter
 * names, so a page's URL reads like the API call it makes.
 */
export const FILTER_FIELDS = [
  "direction",
  "status",
  "channelNumberId",
  "to",
  "from",
  "createdAfter",
  "createdBefore",
] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

export const PAGE_SIZES = ["20", "50", "100"] as const;
const DEFAULT_PAGE_SIZE = "50";

/** The filters as the member gave them (tidied), for the form and for the links to other pages. */
export type FilterValues = Partial<Record<FilterField, string>>;

export type FilterProblem = FilterField | "limit" | "cursor";

export type ParsedFilters = { values: FilterValues; limit: string } & (
  { ok: true; query: MessageListQuery } | { ok: false; errors: Partial<Record<FilterProblem, string>> }
);

// A phone number as people paste it: "+55 (11) 99999-8888".
const PHONE_LIKE = /^\+?[\d\s().-]+$/;
// What a datetime-local field sends (no zone: the page says the times are UTC), or a plain date.
const LOCAL_MINUTES = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const LOCAL_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

function tidy(field: FilterField, raw: string): string {
  const value = raw.trim();
  if ((field === "to" || field === "from") && PHONE_LIKE.test(value)) return value.replace(/\D/g, "");
  // Ids are lowercase everywhere, so the number's option is selected whatever the link's case.
  if (field === "channelNumberId") return value.toLowerCase();
  if (field === "createdAfter" || field === "createdBefore") {
    if (LOCAL_MINUTES.test(value)) return `${value}:00Z`;
    if (LOCAL_SECONDS.test(value)) return `${value}Z`;
    if (DATE_ONLY.test(value)) return `${value}T00:00:00Z`;
  }
  return value;
}

/** Reads the page's query string; an empty field means "any". */
export function parseFilters(query: Record<string, string | undefined>): ParsedFilters {
  const values: FilterValues = {};
  for (const field of FILTER_FIELDS) {
    const value = tidy(field, query[field] ?? "");
    if (value !== "") values[field] = value;
  }
  // The form offers a few page sizes; a link may ask for any the API allows.
  const limit = query.limit?.trim() || DEFAULT_PAGE_SIZE;
  const cursor = query.cursor?.trim() || undefined;
  const parsed = MessageListQuery.safeParse({ ...values, limit, cursor });
  if (parsed.success) return { ok: true, values, limit: String(parsed.data.limit), query: parsed.data };
  const errors: Partial<Record<FilterProblem, string>> = {};
  for (const issue of parsed.error.issues) {
    const field = issue.path[0];
    const known = [...FILTER_FIELDS, "limit", "cursor"].find((f): f is FilterProblem => f === field);
    if (known && !errors[known]) errors[known] = issue.message;
  }
  return { ok: false, values, limit, errors };
}

/** The list with these filters (and a page position), for links. */
export function listHref(values: FilterValues, limit: string, cursor?: string): string {
  const params = new URLSearchParams();
  for (const field of FILTER_FIELDS) {
    const value = values[field];
    if (value !== undefined) params.set(field, value);
  }
  if (limit !== DEFAULT_PAGE_SIZE) params.set("limit", limit);
  if (cursor) params.set("cursor", cursor);
  const qs = params.toString();
  return qs ? `/dashboard/messages?${qs}` : "/dashboard/messages";
}

/** An ISO instant as a datetime-local field shows it (UTC, to the second); "" when it is not one. */
export function toLocalField(iso: string | undefined): string {
  if (!iso) return "";
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return "";
  return new Date(ms).toISOString().slice(0, 19);
}
