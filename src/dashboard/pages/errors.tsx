import type { Context } from "hono";
import type { Role } from "../../lib/roles";
import type { DashboardEnv } from "../context";
import type { RateLimited } from "../../domain/limit-check";

/** Unknown, malformed and other workspaces' ids all get this same page. */
export function notFoundPage(c: Context<DashboardEnv>) {
  c.status(404);
  return c.render(
    <>
      <h1>Not found</h1>
      <p>There is nothing here. It may have been removed, or the link is wrong.</p>
      <p>
        <a href="/dashboard">Back to the overview</a>
      </p>
    </>,
    { title: "Not found" },
  );
}

export function forbiddenPage(c: Context<DashboardEnv>, needed: Role) {
  c.status(403);
  return c.render(
    <>
      <h1>Not allowed</h1>
      <p>
        This needs the <strong>{needed}</strong> role{needed === "owner" ? "" : " or higher"}. Your role is{" "}
        <strong>{c.get("session").role}</strong>; an owner of the workspace can change it.
      </p>
    </>,
    { title: "Not allowed" },
  );
}

/** A cross-site form post (refused by the CSRF check). */
export function crossSitePage(c: Context<DashboardEnv>) {
  c.status(403);
  return c.render(
    <>
      <h1>Form refused</h1>
      <p>This form was not sent from the dashboard itself, so nothing was changed. Open the dashboard and try again.</p>
    </>,
    { title: "Form refused" },
  );
}

export function errorPage(c: Context<DashboardEnv>) {
  c.status(500);
  return c.render(
    <>
      <h1>Something went wrong</h1>
      <p>
        Something went wrong on our side. Try again; if it keeps happening, contact support and quote request id{" "}
        <code>{c.get("requestId")}</code>.
      </p>
    </>,
    { title: "Error" },
  );
}

/**
 * The second step of a destructive action when the browser ran no script:
 * the same POST again, now confirmed.
 */
export function confirmPage(
  c: Context<DashboardEnv>,
  opts: {
    title: string;
    question: string;
    action: string;
    label: string;
    fields?: Record<string, string>;
    back: string;
  },
) {
  return c.render(
    <>
      <h1>{opts.title}</h1>
      <p>{opts.question}</p>
      <form method="post" action={opts.action}>
        <input type="hidden" name="confirmed" value="yes" />
        {Object.entries(opts.fields ?? {}).map(([name, value]) => (
          <input type="hidden" name={name} value={value} />
        ))}
        <button type="submit" class="danger">
          {opts.label}
        </button>{" "}
        <a href={opts.back}>Cancel</a>
      </form>
    </>,
    { title: opts.title },
  );
}

/**
 * An action refused by an abuse limit (the API's own limits: the dashboard is
 * held to them too): 429 with Retry-After, which limit, and how long to wait.
 */
export function rateLimitedPage(c: Context<DashboardEnv>, refusal: RateLimited, back: string) {
  const seconds = Math.max(1, Math.ceil(refusal.decision.retryAfterMs / 1000));
  c.status(429);
  c.header("Retry-After", String(seconds));
  return c.render(
    <>
      <h1>Too many requests</h1>
      <p role="alert">
        Nothing was done: this goes past a limit ({refusal.what}). Try again in {seconds} second
        {seconds === 1 ? "" : "s"}.
      </p>
      <p>
        <a href={back}>Back</a>
      </p>
    </>,
    { title: "Too many requests" },
  );
}
