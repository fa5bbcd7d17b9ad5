import type { Context } from "hono";
import type { AppEnv } from "../../context";
import type { AuditEvent } from "../../domain/audit";
import { recordAudit } from "./record-audit";

// Audit entries of the public API (the API key is the actor) and of the admin
// API (the admin token's fingerprint is), for routes that changed a workspace.

const clientAddress = (c: Context<AppEnv>): string | null => c.req.header("cf-connecting-ip") ?? null;

export function auditApi(c: Context<AppEnv>, event: AuditEvent): Promise<void> {
  const { workspaceId, keyId } = c.get("principal");
  return recordAudit(
    c.env.DB,
    {
      workspaceId,
      actor: { type: "api_key", id: keyId },
      actorLabel: null,
      clientAddress: clientAddress(c),
      requestId: c.get("requestId"),
    },
    event,
  );
}

export function auditAdmin(c: Context<AppEnv>, workspaceId: string, event: AuditEvent): Promise<void> {
  const actor = c.get("adminActor");
  return recordAudit(
    c.env.DB,
    {
      workspaceId,
      actor: { type: "admin", id: actor },
      actorLabel: "operator",
      // The customer reads this log: the operator's staff address stays in the operator's own
      // admin_audit_log (src/middleware/admin-auth.ts), beside the same request id.
      clientAddress: null,
      requestId: c.get("requestId"),
    },
    event,
  );
}
