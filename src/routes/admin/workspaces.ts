import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { getWorkspaceWithLimits, insertWorkspace, planExists } from "../../db/workspaces";
import { ApiError, foundOr404 } from "../../lib/errors";
import { isoNow } from "../../lib/clock";
import { findByUuid } from "../../lib/job-id";
import { jsonBody } from "../../middleware/json-body";
import { auditAdmin } from "../../features/audit/api-audit";

const CreateWorkspace = z.strictObject({
  name: z.string().trim().min(1).max(200),
  plan: z.string().min(1).max(64).openapi({ example: "free", description: "A plan id: free, pro or scale." }),
  monthlyMessageQuota: z
    .number()
    .int()
    .min(0)
    .max(1_000_000_000)
    .optional()
    .openapi({ description: "Overrides the plan's quota." }),
});

const Workspace = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    plan: z.string(),
    monthlyMessageQuota: z.number().int(),
    quotaOverridden: z.boolean(),
    maxNumbers: z.number().int(),
    createdAt: z.string().datetime(),
  })
  .openapi("AdminWorkspace");

const create = createRoute({
  method: "post",
  path: "/workspaces",
  middleware: [jsonBody] as const,
  request: { body: { required: true, content: { "application/json": { schema: CreateWorkspace } } } },
  responses: { 201: jsonContent(Workspace, "Created."), ...errorResponses(400, 401) },
});

const get = createRoute({
  method: "get",
  path: "/workspaces/{workspaceId}",
  request: { params: z.object({ workspaceId: z.string() }) },
  responses: { 200: jsonContent(Workspace, "The workspace."), ...errorResponses(401, 404) },
});

async function view(db: D1Database, id: string): Promise<z.infer<typeof Workspace> | null> {
  const w = await getWorkspaceWithLimits(db, id);
  return w
    ? {
        id: w.id,
        name: w.name,
        plan: w.plan_id,
        monthlyMessageQuota: w.effective_quota,
        quotaOverridden: w.monthly_message_quota !== null,
        maxNumbers: w.max_numbers,
        createdAt: w.created_at,
      }
    : null;
}

export const adminWorkspaceRoutes = newRouter()
  .openapi(create, async (c) => {
    const body = c.req.valid("json");
    if (!(await planExists(c.env.DB, body.plan))) {
      throw new ApiError("invalid_request", `Unknown plan "${body.plan}".`, {
        details: [
          { path: "plan", rule: "enum", message: "Use one of the plans in the plans table (free, pro, scale)." },
        ],
      });
    }
    const id = crypto.randomUUID();
    await insertWorkspace(c.env.DB, {
      id,
      name: body.name,
      plan_id: body.plan,
      monthly_message_quota: body.monthlyMessageQuota ?? null,
      created_at: isoNow(),
    });
    await auditAdmin(c, id, {
      action: "workspace.created",
      target: { type: "workspace", id },
      detail: `plan ${body.plan}`,
    });
    return c.json((await view(c.env.DB, id))!, 201);
  })
  .openapi(get, async (c) => {
    const { workspaceId } = c.req.valid("param");
    return c.json(
      foundOr404(await findByUuid(workspaceId, (id) => view(c.env.DB, id), { asGiven: true }), "Workspace"),
      200,
    );
  });
