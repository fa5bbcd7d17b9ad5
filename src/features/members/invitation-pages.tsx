import { Hono } from "hono";
import type { Context } from "hono";
import { findMemberByInvitation, type MemberRow } from "./store";
import { acceptInvitation } from "./accept-invitation";
import { getWorkspaceWithLimits } from "../../db/workspaces";
import { hashInvitationToken, isWellFormedInvitationToken } from "../../domain/members";
import { isoNow } from "../../lib/clock";
import type { DashboardEnv } from "../../dashboard/context";
import { FieldError } from "../../dashboard/components";
import { formFields } from "../../dashboard/forms";
import { checkNewPassword, NewPasswordFields } from "../../dashboard/pages/password-fields";
import { startSession } from "../../dashboard/session";
import { asActor, auditMember } from "../audit/member-audit";

function invalidInvitation(c: Context<DashboardEnv>) {
  c.status(404);
  return c.render(
    <>
      <h1>Invitation link not valid</h1>
      <p>
        This link has expired, was already used, or was replaced by a newer one. Ask an owner of your workspace for a
        new link.
      </p>
      <p>
        Already set your password? <a href="/dashboard/sign-in">Sign in</a>.
      </p>
    </>,
    { title: "Invitation link not valid" },
  );
}

async function renderForm(c: Context<DashboardEnv>, member: MemberRow, errors: Record<string, string> = {}) {
  const workspace = await getWorkspaceWithLimits(c.env.DB, member.workspace_id);
  return c.render(
    <>
      <h1>Set your password</h1>
      <p>
        You are joining <strong>{workspace?.name ?? "the workspace"}</strong> as <strong>{member.email}</strong> (
        {member.role}).
      </p>
      <form method="post" class="stack narrow">
        <input type="text" name="username" autocomplete="username" value={member.email} readonly hidden />
        <NewPasswordFields errors={errors} />
        <FieldError field="form" message={errors.form} />
        <button type="submit">Set password and sign in</button>
      </form>
    </>,
    { title: "Set your password" },
  );
}

async function invitedMember(c: Context<DashboardEnv>, token: string): Promise<MemberRow | null> {
  // The token is in this page's URL: never send it on as a referrer.
  c.header("Referrer-Policy", "no-referrer");
  if (!isWellFormedInvitationToken(token)) return null;
  return findMemberByInvitation(c.env.DB, await hashInvitationToken(token), isoNow());
}

export const invitationPages = new Hono<DashboardEnv>()
  .get("/invitations/:token", async (c) => {
    const member = await invitedMember(c, c.req.param("token"));
    return member ? renderForm(c, member) : invalidInvitation(c);
  })
  .post("/invitations/:token", async (c) => {
    const token = c.req.param("token");
    const member = await invitedMember(c, token);
    if (!member) return invalidInvitation(c);
    const fields = await formFields(c);
    const errors = checkNewPassword(fields);
    if (errors) {
      c.status(400);
      return renderForm(c, member, errors);
    }
    const accepted = await acceptInvitation(c.env.DB, token, fields.password ?? "");
    if (!accepted) return invalidInvitation(c);
    const redeemed = accepted.member;
    await auditMember(
      c,
      {
        action: "member.invitation_accepted",
        target: { type: "member", id: redeemed.id },
        detail: `as ${redeemed.role}`,
      },
      asActor(redeemed),
    );
    await startSession(c, accepted.sessionToken, "Your password is set and you are signed in.");
    return c.redirect("/dashboard", 303);
  });
