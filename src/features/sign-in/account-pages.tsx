import { Hono } from "hono";
import type { Context } from "hono";
import { getMember } from "../members/store";
import { PASSWORD_MAX_CHARS } from "../../domain/members";
import { changePassword } from "./change-password";
import type { DashboardEnv } from "../../dashboard/context";
import { FieldError } from "../../dashboard/components";
import { formFields } from "../../dashboard/forms";
import { checkNewPassword, NewPasswordFields } from "../../dashboard/pages/password-fields";
import { auditMember } from "../audit/member-audit";
import { startSession } from "../../dashboard/session";

function renderAccount(c: Context<DashboardEnv>, errors: Record<string, string> = {}) {
  const session = c.get("session");
  return c.render(
    <>
      <h1>Your account</h1>
      <dl class="facts">
        <dt>Email</dt>
        <dd>{session.email}</dd>
        <dt>Role</dt>
        <dd>{session.role}</dd>
        <dt>Workspace</dt>
        <dd>{session.workspace_name}</dd>
      </dl>
      <section class="card" aria-labelledby="password-heading">
        <h2 id="password-heading">Change password</h2>
        <p>Changing it signs out every other browser where you are signed in.</p>
        <form method="post" action="/dashboard/account/password" class="stack narrow">
          <input type="text" name="username" autocomplete="username" value={session.email} readonly hidden />
          <label for="current">Current password</label>
          <input
            id="current"
            name="current"
            type="password"
            autocomplete="current-password"
            required
            maxlength={PASSWORD_MAX_CHARS}
            aria-invalid={errors.current ? "true" : undefined}
            aria-describedby={errors.current ? "current-error" : undefined}
          />
          <FieldError field="current" message={errors.current} />
          <NewPasswordFields errors={errors} />
          <button type="submit">Change password</button>
        </form>
      </section>
    </>,
    { title: "Your account" },
  );
}

export const accountPages = new Hono<DashboardEnv>()
  .get("/account", (c) => renderAccount(c))
  // Every role may change its own password.
  .post("/account/password", async (c) => {
    const fields = await formFields(c);
    const problems = checkNewPassword(fields);
    if (problems) {
      c.status(400);
      return renderAccount(c, problems);
    }
    const session = c.get("session");
    const member = await getMember(c.env.DB, session.workspace_id, session.member_id);
    if (!member) return c.redirect("/dashboard/sign-in", 303);
    const result = await changePassword(c.env.DB, c.env, {
      memberId: member.id,
      email: member.email,
      passwordHash: member.password_hash,
      current: (fields.current ?? "").slice(0, PASSWORD_MAX_CHARS),
      next: fields.password ?? "",
    });
    if (!result.ok) {
      c.status(result.reason === "throttled" ? 429 : 400);
      const message =
        result.reason === "throttled" ? "Too many attempts. Try again later." : "The current password is not correct.";
      return renderAccount(c, { current: message });
    }
    await auditMember(c, { action: "member.password_changed", target: { type: "member", id: member.id } });
    await startSession(c, result.token, "Password changed. Other browsers were signed out.");
    return c.redirect("/dashboard/account", 303);
  });
