import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { currentUsage } from "./current-usage";
import { ApiError } from "../../lib/errors";

const Usage = z
  .object({
    period: z.object({
      start: z.string().datetime().openapi({ description: "Start of the current calendar month (UTC), inclusive." }),
      end: z.string().datetime().openapi({ description: "Start of the next month (UTC), exclusive." }),
    }),
    messages: z.object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int() }),
    numbers: z.object({ used: z.number().int(), limit: z.number().int() }),
    daily: z
      .array(
        z.object({
          day: z.string().openapi({ description: "UTC day, YYYY-MM-DD.", example: "2026-11-21" }),
          accepted: z
            .number()
            .int()
            .openapi({ description: "Sends accepted that day (what counts against the quota)." }),
          sent: z.number().int(),
          failed: z.number().int(),
          received: z.number().int().openapi({ description: "Inbound messages." }),
        }),
      )
      .openapi({
        description: "One entry per UTC day of the previous and the current period, up to today (zeros included).",
      }),
  })
  .openapi("Usage");

const route = createRoute({
  method: "get",
  path: "/usage",
  "x-key-role": "viewer",
  operationId: "getUsage",
  tags: ["Account"],
  summary: "Plan usage of the current period",
  description:
    "Accepted sends this calendar month (UTC) against the plan's quota, connected numbers against the plan's maximum, and daily counts " +
    "of this and the previous month. Prices are never exposed.",
  security: bearerSecurity,
  responses: {
    200: jsonContent(Usage, "Usage of the current period.", {
      period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
      messages: { used: 1520, limit: 100000, remaining: 98480 },
      numbers: { used: 2, limit: 10 },
      daily: [{ day: "2026-11-21", accepted: 1520, sent: 1512, failed: 8, received: 311 }],
    }),
    ...errorResponses(401, 429),
  },
});

export const usageRoutes = newRouter().openapi(route, async (c) => {
  const usage = await currentUsage(c.env, c.get("principal").workspaceId);
  if (!usage) throw new ApiError("unauthorized", "Missing or invalid API key.");
  return c.json({ period: usage.period, messages: usage.messages, numbers: usage.numbers, daily: usage.daily }, 200);
});
