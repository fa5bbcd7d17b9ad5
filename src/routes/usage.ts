import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { getWorkspaceWithLimits } from "../db/workspaces";
import { countConnected } from "../db/channel-numbers";
import { workspaceStub } from "../durable-objects/stubs";
import { ApiError } from "../lib/errors";

const Usage = z
  .object({
    period: z.object({
      start: z.string().datetime().openapi({ description: "Start of the current calendar month (UTC), inclusive." }),
      end: z.string().datetime().openapi({ description: "Start of the next month (UTC), exclusive." }),
    }),
    messages: z.object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int() }),
    numbers: z.object({ used: z.number().int(), limit: z.number().int() }),
  })
  .openapi("Usage");

const route = createRoute({
  method: "get",
  path: "/usage",
  summary: "Plan usage of the current period",
  description: "Accepted sends this calendar month (UTC) against the plan's quota, and connected numbers against the plan's maximum. Prices are never exposed.",
  security: bearerSecurity,
  responses: { 200: jsonContent(Usage, "Usage of the current period."), ...errorResponses(401, 429) },
});

export const usageRoutes = newRouter().openapi(route, async (c) => {
  const { workspaceId } = c.get("principal");
  const [workspace, numbers, usage] = await Promise.all([
    getWorkspaceWithLimits(c.env.DB, workspaceId),
    countConnected(c.env.DB, workspaceId),
    workspaceStub(c.env, workspaceId).usage(),
  ]);
  if (!workspace) throw new ApiError("unauthorized", "Missing or invalid API key.");
  return c.json(
    {
      period: usage.period,
      messages: {
        used: usage.messagesUsed,
        limit: workspace.effective_quota,
        remaining: Math.max(0, workspace.effective_quota - usage.messagesUsed),
      },
      numbers: { used: numbers, limit: workspace.max_numbers },
    },
    200,
  );
});
