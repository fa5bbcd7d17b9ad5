import { Hono } from "hono";
import type { Context } from "hono";
import { getMember, listMembers, type MemberRow } from "./store";
import { ROLES } from "../../lib/roles";
import { changeMemberRole } from "./change-role";
import { inviteMember } from "./invite-member";
import { removeMember } from "./remove-member";
import { findByUuid } from "../../lib/job-id";
import { isRateLimited } from "../../domain/limit-check";
import { invitationUrl, MemberEmail, MemberRoleSchema, MAX_MEMBERS_PER_WORKSPACE } from "../../domain/members";
import { now } from "../../lib/clock";
import type { DashboardEnv } from "../../dashboard/context";
import { ConfirmForm, FieldError, Time, TableScroll } from "../../dashboard/components";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { hasRole, requireRole } from "../../dashboard/roles";
import { confirmPage, notFoundPage, rateLimitedPage } from "../../dashboard/pages/errors";
import { auditMember } from "../audit/member-audit";

const ROLE_HELP = {
  owner: "everything, including members",
  developer: "API keys and webhooks",
  viewer: "read only",
} as const;

function memberState(m: MemberRow): string {
  if (m.password_hash) return "active";
  if (m.invitation_expires_at && Date.parse(m.invitation_expires_at) > now()) return "invited";
  return "invitation expired";
}

function RoleSelect({ id, selected }: { id: string; selected: string }) {
  return (
    <select id={id} name="role">
      {ROLES.map((r) => (
        <option value={r} selected={r === selected}>
          {r}
        </option>
      ))}
    </select>
  );
}

function MemberRowView({ m, isOwner, isSelf }: { m: MemberRow; isOwner: boolean; isSelf: boolean }) {
  return (
    <tr>
      <td>
        {m.email}
        {isSelf ? " (you)" : ""}
      </td>
      <td>
        {isOwner ? (
          <form method="post" action={`/dashboard/members/${m.id}/role`} class="inline">
            <label for={`role-${m.id}`} class="visually-hidden">
              Role of {m.email}
            </label>
            <RoleSelect id={`role-${m.id}`} selected={m.role} />{" "}
            <button type="submit" class="secondary">
              Change
            </button>
          </form>
        ) : (
          m.role
        )}
      </td>
      <td>
        {memberState(m)}
        {memberState(m) === "invited" ? (
          <>
            {" "}
            until <Time iso={m.invitation_expires_at} />
          </>
        ) : null}
      </td>
      <td>
        <Time iso={m.created_at} />
      </td>
      {isOwner ? (
        <td>
          <ConfirmForm
            action={`/dashboard/members/${m.id}/remove`}
            question={`Remove ${m.email}? They are signed out at once.`}
            label="Remove"
          />
        </td>
      ) : null}
    </tr>
  );
}

async function renderMembers(c: Context<DashboardEnv>, form: { email?: string; role?: string; error?: string } = {}) {
  const session = c.get("session");
  const members = await listMembers(c.env.DB, session.workspace_id);
  const isOwner = hasRole(session.role, "owner");
  return c.render(
    <>
      <h1>Members</h1>
      <p>
        Roles: <strong>owner</strong> ({ROLE_HELP.owner}), <strong>developer</strong> ({ROLE_HELP.developer}),{" "}
        <strong>viewer</strong> ({ROLE_HELP.viewer}).
      </p>
      {isOwner ? (
        <section class="card" aria-labelledby="invite-heading">
          <h2 id="invite-heading">Invite a member</h2>
          <p class="hint">
            You get a link to pass on (we send no email); it works once, for 7 days. Inviting an existing member again
            gives them a new link, clears their password and signs them out.
          </p>
          <form method="post" action="/dashboard/members" class="row">
            <label for="invite-email">Email</label>
            <input
              id="invite-email"
              name="email"
              type="email"
              required
              maxlength={254}
              value={form.email ?? ""}
              aria-invalid={form.error ? "true" : undefined}
              aria-describedby={form.error ? "email-error" : undefined}
            />
            <label for="invite-role">Role</label>
            <RoleSelect id="invite-role" selected={form.role ?? "developer"} />
            <button type="submit">Create invitation link</button>
          </form>
          <FieldError field="email" message={form.error} />
        </section>
      ) : null}
      <TableScroll label="Members">
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">State</th>
              <th scope="col">Added</th>
              {isOwner ? (
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              ) : null}
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <MemberRowView m={m} isOwner={isOwner} isSelf={m.id === session.member_id} />
            ))}
          </tbody>
        </table>
      </TableScroll>
    </>,
    { title: "Members" },
  );
}

async function ownMember(c: Context<DashboardEnv>): Promise<MemberRow | null> {
  const id = c.req.param("id") ?? "";
  return findByUuid(id, (stored) => getMember(c.env.DB, c.get("session").workspace_id, stored));
}

const LAST_OWNER = "A workspace needs at least one owner: make someone else owner first.";

export const memberPages = new Hono<DashboardEnv>()
  .get("/members", (c) => renderMembers(c))
  .post("/members", requireRole("owner"), async (c) => {
    const fields = await formFields(c);
    const session = c.get("session");
    const rawEmail = (fields.email ?? "").slice(0, 254);
    const email = MemberEmail.safeParse(rawEmail);
    const role = MemberRoleSchema.safeParse(fields.role);
    const refuse = (error: string) => {
      c.status(400);
      return renderMembers(c, { email: rawEmail, role: role.success ? role.data : undefined, error });
    };
    if (!email.success) return refuse("Enter an email address.");
    if (!role.success) return refuse("Choose a role.");
    if (email.data === session.email) return refuse("That is you: change your own password on your account page.");
    const result = await inviteMember(c.env, session.workspace_id, email.data, role.data);
    if (isRateLimited(result)) return rateLimitedPage(c, result, "/dashboard/members");
    if (!result.ok) {
      const reasons = {
        too_many_members: `A workspace can have at most ${MAX_MEMBERS_PER_WORKSPACE} members.`,
        last_owner: LAST_OWNER,
      } as const;
      return refuse(reasons[result.reason]);
    }
    await auditMember(c, {
      action: "member.invited",
      target: { type: "member", id: result.member.id },
      detail: `${result.member.email} as ${result.member.role}`,
    });
    await setFlash(
      c,
      {
        notice: `Invitation for ${result.member.email} (${result.member.role}) created. Pass the link on; it works once, until ${result.expiresAt.slice(0, 10)}.`,
        secret: { label: "Invitation link", value: invitationUrl(new URL(c.req.url).origin, result.token) },
      },
      session.token_hash,
    );
    return c.redirect("/dashboard/members", 303);
  })
  .post("/members/:id/role", requireRole("owner"), async (c) => {
    const member = await ownMember(c);
    if (!member) return notFoundPage(c);
    const role = MemberRoleSchema.safeParse((await formFields(c)).role);
    if (!role.success) {
      c.status(400);
      return renderMembers(c, { error: "Choose a role." });
    }
    const session = c.get("session");
    const outcome = await changeMemberRole(c.env, session.workspace_id, member.id, role.data);
    if (!outcome.ok) return rateLimitedPage(c, outcome, "/dashboard/members");
    const changed = outcome.member;
    if (changed && member.role !== role.data) {
      await auditMember(c, {
        action: "member.role_changed",
        target: { type: "member", id: member.id },
        detail: `${member.email}: ${member.role} → ${role.data}`,
      });
    }
    await setFlash(
      c,
      changed ? { notice: `${member.email} is now ${role.data}.` } : { notice: LAST_OWNER, error: true },
      session.token_hash,
    );
    return c.redirect("/dashboard/members", 303);
  })
  .post("/members/:id/remove", requireRole("owner"), async (c) => {
    const member = await ownMember(c);
    if (!member) return notFoundPage(c);
    if ((await formFields(c)).confirmed !== "yes") {
      return confirmPage(c, {
        title: "Remove member",
        question: `Remove ${member.email}? They are signed out at once and their invitation link stops working.`,
        action: `/dashboard/members/${member.id}/remove`,
        label: "Remove member",
        back: "/dashboard/members",
      });
    }
    const session = c.get("session");
    const outcome = await removeMember(c.env, session.workspace_id, member.id);
    if (!outcome.ok) return rateLimitedPage(c, outcome, "/dashboard/members");
    const { removed } = outcome;
    if (removed)
      await auditMember(c, {
        action: "member.removed",
        target: { type: "member", id: member.id },
        detail: member.email,
      });
    if (removed && member.id === session.member_id) return c.redirect("/dashboard/sign-in", 303);
    await setFlash(
      c,
      removed ? { notice: `${member.email} removed.` } : { notice: LAST_OWNER, error: true },
      session.token_hash,
    );
    return c.redirect("/dashboard/members", 303);
  });
