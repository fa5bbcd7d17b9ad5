import type { Actor } from "./actor";

/** Every action the audit log records, with the words owners read on its page. */
export const AUDIT_ACTIONS = {
  "workspace.created": "workspace created",
  "api_key.created": "API key created",
  "api_key.revoked": "API key revoked",
  "webhook.configured": "webhook URL set (new signing secret)",
  "webhook.reenabled": "webhook re-enabled",
  "webhook.test_sent": "test event sent",
  "webhook.event_replayed": "event replayed",
  "sandbox.inbound_injected": "sandbox inbound message injected",
  "sandbox.test_contact_added": "sandbox test contact added",
  "sandbox.test_contact_removed": "sandbox test contact removed",
  "template.test_sent": "template test message sent (dashboard)",
  "sandbox.test_message_sent": "sandbox test message sent (dashboard)",
  "channel_number.connected": "number connected",
  "channel_number.disconnected": "number disconnected",
  "channel_number.credentials_replaced": "number credentials replaced",
  "channel_number.claimed": "number connected, taken over from a connection the operator no longer honours",
  "channel_number.claimed_away":
    "number disconnected: the operator refused its token and another workspace proved control",
  "member.invited": "member invited (or re-invited)",
  "member.role_changed": "member role changed",
  "member.removed": "member removed",
  "member.invitation_accepted": "invitation accepted (password set)",
  "member.signed_in": "signed in",
  "member.sign_in_failed": "sign-in failed (wrong password)",
  "member.signed_out": "signed out",
  "member.password_changed": "password changed",
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
export const isAuditAction = (s: string): s is AuditAction => Object.hasOwn(AUDIT_ACTIONS, s);

/** What happened; `detail` is for names, roles, hosts and ids, never a secret or a message's content. */
export interface AuditEvent {
  action: AuditAction;
  target: { type: string; id: string | null };
  detail?: string | null;
}

/** Who did it, from where, under which request. */
export interface AuditSource {
  workspaceId: string;
  actor: Actor;
  /** How the actor reads now (a member's email, a key's name): kept after the actor is gone. */
  actorLabel: string | null;
  clientAddress: string | null;
  requestId: string;
}
