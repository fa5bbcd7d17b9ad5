import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { EXAMPLE } from "../lib/openapi-examples";
import { getWorkspaceWithLimits } from "../db/workspaces";
import { ApiError } from "../lib/errors";
import { getKey } from "../features/api-keys/store";
import { KeyRoleSchema } from "../lib/roles";

const Me = z
  .object({
    workspace: z.object({ id: z.string().uuid(), name: z.string(), plan: z.string() }),
    apiKey: z.object({
      id: z.string().uuid(),
      name: z.string().nullable(),
      lastFour: z
        .string()
        .openapi({ description: "The last four characters of the key; the key itself is never returned." }),
      createdAt: z.string().datetime(),
      role: KeyRoleSchema,
    }),
  })
  .openapi("Me");

const route = createRoute({
  method: "get",
  path: "/me",
  "x-key-role": "viewer",
  operationId: "getMe",
  tags: ["Account"],
  summary: "Verify the API key and show its workspace",
  security: bearerSecurity,
  responses: {
    200: jsonContent(Me, "The workspace this key belongs to.", {
      workspace: { id: EXAMPLE.workspaceId, name: "Acme", plan: "pro" },
      apiKey: {
        id: EXAMPLE.apiKeyId,
        name: "backend",
        lastFour: "x9Qz",
        createdAt: EXAMPLE.createdAt,
        role: "developer",
      },
    }),
    ...errorResponses(401, 429),
  },
});

export const meRoutes = newRouter().openapi(route, async (c) => {
  const { workspaceId, keyId } = c.get("principal");
  const [workspace, key] = await Promise.all([
    getWorkspaceWithLimits(c.env.DB, workspaceId),
    getKey(c.env.DB, workspaceId, keyId),
  ]);
  if (!workspace || !key) throw new ApiError("unauthorized", "Missing or invalid API key.");
  return c.json(
    {
      workspace: { id: workspace.id, name: workspace.name, plan: workspace.plan_id },
      apiKey: { id: key.id, name: key.name, lastFour: key.last_four, createdAt: key.created_at, role: key.role },
    },
    200,
  );
});
