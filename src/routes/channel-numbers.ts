import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { getConnectedNumber, listConnectedNumbers } from "../db/channel-numbers";
import { ChannelNumber, toChannelNumberView } from "../domain/channel-number-view";
import { notFound } from "../lib/errors";
import { PaginationQuery, decodeCursor, toPage } from "../lib/pagination";
import { UUID_PATTERN } from "../domain/job-id";

const NumbersList = z
  .object({ data: z.array(ChannelNumber), nextCursor: z.string().nullable() })
  .openapi("NumbersList");

const list = createRoute({
  method: "get",
  path: "/channel-numbers",
  summary: "List the workspace's connected numbers",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: { 200: jsonContent(NumbersList, "Connected numbers, oldest first."), ...errorResponses(400, 401) },
});

const get = createRoute({
  method: "get",
  path: "/channel-numbers/{id}",
  summary: "Get one connected number",
  security: bearerSecurity,
  request: { params: z.object({ id: z.string().openapi({ format: "uuid" }) }) },
  responses: { 200: jsonContent(ChannelNumber, "The number."), ...errorResponses(401, 404) },
});

export const channelNumberRoutes = newRouter()
  .openapi(list, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const rows = await listConnectedNumbers(c.env.DB, c.get("principal").workspaceId, limit + 1, decodeCursor(cursor));
    return c.json(toPage(rows, limit, (r) => ({ sortKey: r.created_at, id: r.id }), toChannelNumberView), 200);
  })
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    // A malformed, foreign or disconnected id is indistinguishable from an unknown one.
    const row = UUID_PATTERN.test(id) ? await getConnectedNumber(c.env.DB, c.get("principal").workspaceId, id) : null;
    if (!row) throw notFound("Channel number");
    return c.json(toChannelNumberView(row), 200);
  });
