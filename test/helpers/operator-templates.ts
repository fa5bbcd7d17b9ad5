import { env } from "cloudflare:workers";
import { answerAtEdge } from "./edge";
import { call } from "./http";

/** A request to `/api/v2…` through the Worker's real fetch handler. */
export function apiV2(
  path: string,
  key: string | null,
  init: RequestInit & { json?: unknown; idempotencyKey?: string } = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (key !== null) headers.set("Authorization", `Bearer ${key}`);
  if (init.idempotencyKey !== undefined) headers.set("Idempotency-Key", init.idempotencyKey);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(init.json);
  }
  return call(`/api/v2${path}`, { ...init, headers, body });
}

/** `POST /api/v2/messages` with a fresh Idempotency-Key unless one is given. */
export const sendV2 = (key: string, body: unknown, idempotencyKey: string = crypto.randomUUID()) =>
  apiV2("/messages", key, { method: "POST", json: body, idempotencyKey });

/** A template as the operator lists it (`GET /{waba-id}/message_templates`). */
export interface OperatorTemplateFixture {
  name: string;
  language: string;
  status: string;
  category: string;
  parameter_format?: "POSITIONAL" | "NAMED";
  components: Record<string, unknown>[];
}

export const positionalTemplate = (
  name: string,
  over: Partial<OperatorTemplateFixture> = {},
): OperatorTemplateFixture => ({
  name,
  language: "en_US",
  status: "APPROVED",
  category: "UTILITY",
  parameter_format: "POSITIONAL",
  components: [{ type: "BODY", text: "Hi {{1}}, your order {{2}} has shipped." }],
  ...over,
});

/**
 * Fakes the operator's `GET /{version}/{waba-id}/message_templates` of one account at the
 * network edge, paged like the Graph API (`limit`, `after`; `paging.cursors.after` and
 * `paging.next` while more follow); `name` filters. Other requests go to the answers below it on
 * the edge (a fakeOperatorAccount included). Every page asked is recorded in `pages`. `restore()`
 * takes it off the edge (vi.restoreAllMocks() clears it too, with the whole edge).
 */
export function fakeTemplates(account: { wabaId: string; token: string }, templates: OperatorTemplateFixture[] = []) {
  const prefix = `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/${account.wabaId}/message_templates`;
  const fake = {
    templates,
    /** Query strings of the pages the operator answered (failures included). */
    pages: [] as URLSearchParams[],
    /** When set, every call answers this instead (a failing operator). */
    failure: null as (() => Response) | null,
    restore: () => undefined as void,
  };
  fake.restore = answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    const [path, query = ""] = req.url.split("?");
    if (req.method !== "GET" || path !== prefix) return undefined;
    const q = new URLSearchParams(query);
    fake.pages.push(q);
    if (fake.failure) return fake.failure();
    if (req.headers.get("authorization") !== `Bearer ${account.token}`)
      return Response.json({ error: { code: 190, message: "Error validating access token" } }, { status: 401 });
    const all = fake.templates.filter((t) => !q.has("name") || t.name === q.get("name"));
    const limit = Number(q.get("limit") ?? 25);
    const start = q.has("after") ? Number(atob(q.get("after")!)) : 0;
    const data = all.slice(start, start + limit);
    const more = start + limit < all.length;
    const after = btoa(String(start + limit));
    return Response.json({
      data,
      paging: {
        cursors: { before: btoa(String(start)), after },
        ...(more ? { next: `${prefix}?limit=${limit}&after=${after}` } : {}),
      },
    });
  });
  return fake;
}

/** `message_template_status_update`, as the operator documents it. */
export const templateStatusPayload = (
  wabaId: string,
  value: { event: string; message_template_name: string; message_template_language: string } & Record<string, unknown>,
) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: wabaId,
      time: 1_700_000_000,
      changes: [{ field: "message_template_status_update", value: { message_template_id: 1234567890, ...value } }],
    },
  ],
});
