import { Hono } from "hono";
import type { Context } from "hono";
import { endSession, resolveSession } from "./sessions";
import { PASSWORD_MAX_CHARS } from "../../domain/members";
import { mayTraceFailedSignIn, signIn } from "./sign-in";
import { clientAddress } from "../../lib/client-address";
import { log } from "../../lib/log";
import type { DashboardEnv } from "../../dashboard/context";
import { formFields } from "../../dashboard/forms";
import { clearSessionCookie, readSessionCookie, safeNext, setSessionCookie } from "../../dashboard/session";
import { askForWorkspace } from "./choose-workspace-pages";
import { asActor, auditMember } from "../audit/member-audit";

const MAX_EMAIL_CHARS = 254;

function SignInForm({ next, error, email }: { next: string; error?: string; email?: string }) {
  return (
    <>
      <h1>Sign in</h1>
      {error ? (
        <p class="form-error" role="alert" id="sign-in-error">
          {error}
        </p>
      ) : null}
      <form
        method="post"
        action="/dashboard/sign-in"
        class="stack narrow"
        aria-describedby={error ? "sign-in-error" : undefined}
      >
        <input type="hidden" name="next" value={next} />
        <label for="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autocomplete="username"
          required
          maxlength={MAX_EMAIL_CHARS}
          value={email ?? ""}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="current-password"
          required
          maxlength={PASSWORD_MAX_CHARS}
        />
        <button type="submit">Sign in</button>
      </form>
      <p class="hint">
        No account yet, or forgot your password? An owner of your workspace can send you a new invitation link from the
        Members page.
      </p>
    </>
  );
}

function renderSignIn(c: Context<DashboardEnv>, next: string, opts: { error?: string; email?: string } = {}) {
  return c.render(<SignInForm next={next} {...opts} />, { title: "Sign in" });
}

export const signInPages = new Hono<DashboardEnv>()
  .get("/sign-in", async (c) => {
    if (await resolveSession(c.env.DB, readSessionCookie(c))) return c.redirect("/dashboard", 303);
    return renderSignIn(c, safeNext(c.req.query("next")));
  })
  .post("/sign-in", async (c) => {
    const fields = await formFields(c);
    const next = safeNext(fields.next);
    const email = (fields.email ?? "").trim().toLowerCase();
    const password = fields.password ?? "";
    if (!email || !password || email.length > MAX_EMAIL_CHARS || password.length > PASSWORD_MAX_CHARS) {
      c.status(400);
      return renderSignIn(c, next, { error: "Enter your email and password.", email: email.slice(0, MAX_EMAIL_CHARS) });
    }
    const result = await signIn(c.env.DB, c.env, { email, password, clientAddress: clientAddress(c.req.raw) });
    if (!result.ok) {
      if (result.reason === "throttled") {
        const seconds = Math.ceil(result.retryAfterMs / 1000);
        c.status(429);
        c.header("Retry-After", String(seconds));
        return renderSignIn(c, next, {
          error: `Too many sign-in attempts. Try again in ${Math.ceil(seconds / 60) === 1 ? "a minute" : `${Math.ceil(seconds / 60)} minutes`}.`,
          email,
        });
      }
      // Owners see failed attempts at their members (bounded per workspace), written after the
      // answer: the person gets one answer, in the same time, for an unknown email, a member
      // without a password and a wrong password.
      c.executionCtx.waitUntil(
        Promise.all(
          result.tried.map(async (m) => {
            try {
              if (await mayTraceFailedSignIn(c.env, m.workspace_id))
                await auditMember(
                  c,
                  { action: "member.sign_in_failed", target: { type: "member", id: m.id } },
                  asActor(m),
                );
            } catch (err) {
              log("error", "failed sign-in not traced", {
                requestId: c.get("requestId"),
                detail: err instanceof Error ? err.message : String(err),
              });
            }
          }),
        ),
      );
      c.status(401);
      return renderSignIn(c, next, { error: "Email or password is incorrect.", email });
    }
    if (result.kind === "choose") return askForWorkspace(c, result, next);
    await auditMember(
      c,
      { action: "member.signed_in", target: { type: "member", id: result.member.id } },
      asActor(result.member),
    );
    setSessionCookie(c, result.token);
    return c.redirect(next, 303);
  })
  .post("/sign-out", async (c) => {
    const session = await resolveSession(c.env.DB, readSessionCookie(c));
    if (session)
      await auditMember(c, { action: "member.signed_out", target: { type: "member", id: session.member_id } }, session);
    await endSession(c.env.DB, readSessionCookie(c));
    clearSessionCookie(c);
    return c.redirect("/dashboard/sign-in", 303);
  });
