/**
 * Who acts on a workspace: an API key (the public API), a member (the
 * dashboard) or the admin token (the admin API, by its fingerprint).
 * Abuse limits that are "per caller" and the audit log both name callers this way.
 */
export type Actor = { type: "api_key"; id: string } | { type: "member"; id: string } | { type: "admin"; id: string };

/** A workspace and who acts on it: what every state-changing domain operation needs to know. */
export interface Caller {
  workspaceId: string;
  actor: Actor;
}
