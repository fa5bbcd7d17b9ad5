import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { listKeys, type ApiKeyRow } from "./store";
import { issueApiKey } from "./issue-key";
import { revokeApiKey } from "./revoke-key";
import { notFound } from "../../lib/errors";
import { requireWorkspace } from "../../routes/admin/require-workspace";
import { jsonBody } from "../../middleware/json-body";
import { noStore } from "../../middleware/security-headers";
import { throwIfLimited } from "../../middleware/rate-limit";
import { auditAdmin } from "../audit/api-audit";
import { keyCreatedDetail } from "../../domain/api-keys";
import { KeyRoleSchema } from "../../lib/roles";

const ApiKey = z
  .object({
    id: z.string().uuid(),
    workspaceId: z.string().uuid(),
    name: z.string().nullable(),
    lastFour: z.string(),
    role: KeyRoleSchema,
    createdAt: z.string().datetime(),
    revokedAt: z.string().datetime().nullable(),
  })
  .openapi("AdminApiKey");

const CreatedApiKey = ApiKey.extend({
  key: z.string().openapi({ description: "The full key. Shown this once; store it now." }),
}).openapi("AdminCreatedApiKey");

const toView = (row: ApiKeyRow): z.infer<typeof ApiKey> => ({
  id: row.id,
  workspaceId: row.workspace_id,
  name: row.name,
  lastFour: row.last_four,
  role: row.role,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

const WorkspaceParam = z.object({ workspaceId: z.string() });

const create = createRoute({
  method: "post",
  path: "/workspaces/{workspaceId}/api-keys",
  // The answer carries the key.
  middleware: [noStore, jsonBody] as const,
  request: {
    params: WorkspaceParam,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.strictObject({
            name: z.string().trim().min(1).max(200).optional(),
            // Whoever runs the service acts for the business: its keys are owner keys unless asked for less.
            role: KeyRoleSchema.default("owner"),
          }),
        },
      },
    },
  },
  responses: {
    201: jsonContent(CreatedApiKey, "Created; the only response that contains the key."),
    ...errorResponses(400, 401, 404, 429),
  },
});

const list = createRoute({
  method: "get",
  path: "/workspaces/{workspaceId}/api-keys",
  request: { params: WorkspaceParam },
  responses: {
    200: jsonContent(z.object({ data: z.array(ApiKey) }), "Keys, without secrets."),
    ...errorResponses(401, 404),
  },
});

const revoke = createRoute({
  method: "delete",
  path: "/api-keys/{keyId}",
  request: { params: z.object({ keyId: z.string() }) },
  responses: { 204: { description: "Revoked (also when it already was)." }, ...errorResponses(401, 404) },
});

export const adminApiKeyRoutes = newRouter()
  .openapi(create, async (c) => {
    const { workspaceId } = c.req.valid("param");
    const { name, role } = c.req.valid("json");
    await requireWorkspace(c.env.DB, workspaceId);
    const issued = await issueApiKey(c.env, workspaceId, { name: name ?? null, role, maker: "owner" });
    throwIfLimited(issued);
    // An owner may grant every role: only the limit above can refuse.
    if (!issued.ok) throw new Error("an owner-made key was refused its role");
    await auditAdmin(c, workspaceId, {
      action: "api_key.created",
      target: { type: "api_key", id: issued.row.id },
      detail: keyCreatedDetail(issued.row),
    });
    return c.json({ ...toView(issued.row), key: issued.key }, 201);
  })
  .openapi(list, async (c) => {
    const { workspaceId } = c.req.valid("param");
    await requireWorkspace(c.env.DB, workspaceId);
    return c.json({ data: (await listKeys(c.env.DB, workspaceId)).map(toView) }, 200);
  })
  .openapi(revoke, async (c) => {
    const { keyId } = c.req.valid("param");
    const workspaceId = await revokeApiKey(c.env.DB, keyId);
    if (!workspaceId) throw notFound("API key");
    await auditAdmin(c, workspaceId, {
      action: "api_key.revoked",
      target: { type: "api_key", id: keyId.toLowerCase() },
    });
    return c.body(null, 204);
  });
