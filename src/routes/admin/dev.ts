import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { config } from "../../config";
import { restartObjects } from "../../engine/dev";
import { jsonBody } from "../../middleware/json-body";
import { notFound } from "../../lib/errors";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../context";

/** Off (production's "false"): the route is not there, before its body is read. */
const devOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!config(c.env).dev.objectRestarts) throw notFound("Route");
  await next();
};

const ObjectRestarts = z.strictObject({
  workspaceIds: z.array(z.uuid()).max(100).default([]),
  channelNumberIds: z.array(z.uuid()).max(100).default([]),
});

const Restarted = z
  .object({ restarted: z.number().int().openapi({ description: "Objects asked to end themselves." }) })
  .openapi("AdminObjectRestarts");

const restart = createRoute({
  method: "post",
  path: "/dev/object-restarts",
  summary: "Local soak runs only: restart workspace and number objects (DEV_OBJECT_RESTARTS)",
  description:
    "Each named object ends itself, as a deploy ends it (what it held in memory is gone; the next call starts it " +
    'again on its storage); the Worker and its queues stay up. A 404, like any unknown path, unless DEV_OBJECT_RESTARTS is "true".',
  middleware: [devOnly, jsonBody] as const,
  request: { body: { required: true, content: { "application/json": { schema: ObjectRestarts } } } },
  responses: { 200: jsonContent(Restarted, "Each object ended itself."), ...errorResponses(400, 401, 404) },
});

/** `npm run soak`: restarts of the objects alone, beside its kills of the whole process (bench/soak.md). */
export const adminDevRoutes = newRouter().openapi(restart, async (c) => {
  const { workspaceIds, channelNumberIds } = c.req.valid("json");
  return c.json({ restarted: await restartObjects(c.env, workspaceIds, channelNumberIds) }, 200);
});
