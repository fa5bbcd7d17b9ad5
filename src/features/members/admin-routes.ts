import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { getMember, listMembers, type MemberRow } from "./store";
import { ROLES } from "../../lib/roles";
import { inviteMember } from "./invite-member";
import { removeMember } from "./remove-member";
import { throwIfLimited } from "../../middleware/rate-limit";
import { invitationUrl, MAX_MEMBERS_PER_WORKSPACE, MemberEmail, MemberRoleSchema } from "../../domain/members";
import { ApiError, notFound } from "../../lib/errors";
import { findByUuid } from "../../lib/job-id";
import { requireWorkspace } from "../../routes/admin/require-workspace";
import { jsonBody } from "../../middleware/json-body";
import { noStore } from "../../middleware/security-headers";
import { auditAdmin } from "../audit/api-audit";

const Member = z
  .object({
    id: z.string().uuid(),
    workspaceId: z.string().uuid(),
    email: z.string(),
    role: z.enum(ROLES),
    passwordSet: z.boolean().openapi({ description: "False until the member uses an invitation link." }),
    invitationExpiresAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({ description: "When the outstanding invitation link stops working, if there is one." }),
    createdAt: z.string().datetime(),
  })
  .openapi("AdminMember");

const Invitation = z
  .object({
    member: Member,
    invitationUrl: z
      .string()
      .url()
      .openapi({ description: "Single-use link to set a password; shown in this response only." }),
    expiresAt: z.string().datetime(),
  })
  .openapi("AdminInvitation");

const toView = (m: MemberRow): z.infer<typeof Member> => ({
  id: m.id,
  workspaceId: m.workspace_id,
  email: m.email,
  role: m.role,
  passwordSet: m.password_hash !== null,
  invitationExpiresAt: m.invitation_expires_at,
  createdAt: m.created_at,
});

const WorkspaceParam = z.object({ workspaceId: z.string() });

const invite = createRoute({
  method: "post",
  path: "/workspaces/{workspaceId}/members",
  // The answer carries the invitation link (a credential until it is used).
  middleware: [noStore, jsonBody] as const,
  request: {
    params: WorkspaceParam,
    body: {
      required: true,
      content: { "application/json": { schema: z.strictObject({ email: MemberEmail, role: MemberRoleSchema }) } },
    },
  },
  responses: {
    201: jsonContent(
      Invitation,
      "The member (created, or reset if the email is already a member: new role, password cleared, sessions ended) and its invitation link.",
    ),
    ...errorResponses(400, 401, 404, 429),
  },
});

const list = createRoute({
  method: "get",
  path: "/workspaces/{workspaceId}/members",
  request: { params: WorkspaceParam },
  responses: {
    200: jsonContent(z.object({ data: z.array(Member) }), "Members, without secrets."),
    ...errorResponses(401, 404),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/workspaces/{workspaceId}/members/{memberId}",
  request: { params: WorkspaceParam.extend({ memberId: z.string() }) },
  responses: {
    204: { description: "Removed: the member's sessions ended and its invitation link stopped working." },
    ...errorResponses(400, 401, 404, 429),
  },
});

export const adminMemberRoutes = newRouter()
  .openapi(invite, async (c) => {
    const { workspaceId } = c.req.valid("param");
    const { email, role } = c.req.valid("json");
    await requireWorkspace(c.env.DB, workspaceId);
    const result = await inviteMember(c.env, workspaceId, email, role);
    throwIfLimited(result);
    if (!result.ok) {
      const messages = {
        too_many_members: `The workspace already has ${MAX_MEMBERS_PER_WORKSPACE} members.`,
        last_owner: "This member is the workspace's last owner: make another member owner first.",
      } as const;
      const message = messages[result.reason];
      throw new ApiError("invalid_request", message, { details: [{ path: "email", rule: result.reason, message }] });
    }
    await auditAdmin(c, workspaceId, {
      action: "member.invited",
      target: { type: "member", id: result.member.id },
      detail: `${result.member.email} as ${result.member.role}`,
    });
    return c.json(
      {
        member: toView(result.member),
        invitationUrl: invitationUrl(new URL(c.req.url).origin, result.token),
        expiresAt: result.expiresAt,
      },
      201,
    );
  })
  .openapi(remove, async (c) => {
    const { workspaceId, memberId } = c.req.valid("param");
    await requireWorkspace(c.env.DB, workspaceId);
    const member = await findByUuid(memberId, (stored) => getMember(c.env.DB, workspaceId, stored));
    if (!member) throw notFound("Member");
    const outcome = await removeMember(c.env, workspaceId, member.id);
    throwIfLimited(outcome);
    if (!outcome.removed) {
      const message = "This member is the workspace's last owner: make another member owner first.";
      throw new ApiError("invalid_request", message, {
        details: [{ path: "path.memberId", rule: "last_owner", message }],
      });
    }
    await auditAdmin(c, workspaceId, {
      action: "member.removed",
      target: { type: "member", id: member.id },
      detail: member.email,
    });
    return c.body(null, 204);
  })
  .openapi(list, async (c) => {
    const { workspaceId } = c.req.valid("param");
    await requireWorkspace(c.env.DB, workspaceId);
    return c.json({ data: (await listMembers(c.env.DB, workspaceId)).map(toView) }, 200);
  });
