import type { Context } from "hono";
import type { SessionWithMember } from "../sign-in/store";
import type { MemberRow } from "../members/store";
import type { AuditEvent } from "../../domain/audit";
import { recordAudit } from "./record-audit";
import type { DashboardEnv } from "../../dashboard/context";

/** A member row as the actor of an entry. */
export const asActor = (m: Pick<MemberRow, "id" | "workspace_id" | "email">) => ({
  workspace_id: m.workspace_id,
  member_id: m.id,
  email: m.email,
});

/** An audit entry for a dashboard action of `member` (the signed-in member, unless given: sign-in and invitations have no session yet). */
export function auditMember(
  c: Context<DashboardEnv>,
  event: AuditEvent,
  member: Pick<SessionWithMember, "workspace_id" | "member_id" | "email"> = c.get("session"),
): Promise<void> {
  return recordAudit(
    c.env.DB,
    {
      workspaceId: member.workspace_id,
      actor: { type: "member", id: member.member_id },
      actorLabel: member.email,
      clientAddress: c.req.header("cf-connecting-ip") ?? null,
      requestId: c.get("requestId"),
    },
    event,
  );
}
