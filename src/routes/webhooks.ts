import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { listWebhooks } from "../db/webhooks";
import { Webhook, toWebhookView } from "../domain/webhook-view";
import { PaginationQuery, decodeCursor, toPage } from "../lib/pagination";

const WebhookList = z.object({ data: z.array(Webhook), nextCursor: z.string().nullable() }).openapi("WebhookList");

const list = createRoute({
  method: "get",
  path: "/webhooks",
  summary: "List the workspace's webhooks (secrets are never included)",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: { 200: jsonContent(WebhookList, "Webhooks, oldest first."), ...errorResponses(400, 401) },
});

export const webhookRoutes = newRouter().openapi(list, async (c) => {
  const { limit, cursor } = c.req.valid("query");
  const rows = await listWebhooks(c.env.DB, c.get("principal").workspaceId, limit + 1, decodeCursor(cursor));
  return c.json(toPage(rows, limit, (r) => ({ sortKey: r.created_at, id: r.id }), toWebhookView), 200);
});
