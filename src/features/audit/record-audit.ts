import type { AuditEvent, AuditSource } from "../../domain/audit";
import { isoNow } from "../../lib/clock";
import { log } from "../../lib/log";
import { appendAudit } from "./store";

/**
 * Appends an entry to the workspace's audit log, after the action succeeded.
 * A failed write is logged and does not undo or fail the action, which has
 * already happened (as for the admin audit).
 */
export async function recordAudit(db: D1Database, source: AuditSource, event: AuditEvent): Promise<void> {
  try {
    await appendAudit(db, {
      workspace_id: source.workspaceId,
      at: isoNow(),
      actor_type: source.actor.type,
      actor_id: source.actor.id,
      actor_label: source.actorLabel,
      action: event.action,
      target_type: event.target.type,
      target_id: event.target.id,
      detail: event.detail ?? null,
      client_address: source.clientAddress,
      request_id: source.requestId,
    });
  } catch (err) {
    log("error", "audit entry could not be written", {
      requestId: source.requestId,
      action: event.action,
      detail: err instanceof Error ? err.message : String(err),
    });
  }
}
