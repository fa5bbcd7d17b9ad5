import type { SessionWithMember } from "../features/sign-in/store";
import type { Flash } from "./flash";
import type { Caller } from "../domain/actor";

export type DashboardEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** The signed-in member's session (every page but sign-in and invitations). */
    session: SessionWithMember;
    sessionToken: string;
    /** A one-time message (and maybe a secret shown once) left by the previous POST. */
    flash: Flash | undefined;
  };
};

/** The signed-in member as the caller of a domain operation. */
export const memberCaller = (session: SessionWithMember): Caller => ({
  workspaceId: session.workspace_id,
  actor: { type: "member", id: session.member_id },
});
