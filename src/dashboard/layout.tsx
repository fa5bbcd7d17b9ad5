import type { Context } from "hono";
import type { Child } from "hono/jsx";
import { jsxRenderer } from "hono/jsx-renderer";
import type { DashboardEnv } from "./context";
import { FlashMessage } from "./components";
import type { Role } from "../lib/roles";
import { hasRole } from "./roles";

declare module "hono" {
  interface ContextRenderer {
    (content: Child, props: { title: string }): Response | Promise<Response>;
  }
}

/** The sections of the signed-in dashboard, in navigation order, and the role each needs. */
const SECTIONS = [
  { href: "/dashboard", label: "Overview", role: "viewer" },
  { href: "/dashboard/messages", label: "Messages", role: "viewer" },
  { href: "/dashboard/api-keys", label: "API keys", role: "viewer" },
  { href: "/dashboard/numbers", label: "Numbers", role: "viewer" },
  { href: "/dashboard/webhooks", label: "Webhooks", role: "viewer" },
  { href: "/dashboard/members", label: "Members", role: "viewer" },
  { href: "/dashboard/audit", label: "Audit log", role: "owner" },
] as const satisfies readonly { href: string; label: string; role: Role }[];

/** The section a path belongs to ("" for pages outside the navigation, such as the account page). */
function currentSection(path: string): string {
  const match = SECTIONS.find((s) => path === s.href || (s.href !== "/dashboard" && path.startsWith(`${s.href}/`)));
  return match?.href ?? "";
}

function Header({ c }: { c: Context<DashboardEnv> }) {
  const session = c.get("session");
  if (!session) {
    return (
      <header class="site">
        <a class="brand" href="/dashboard">
          Messaging gateway
        </a>
      </header>
    );
  }
  const path = new URL(c.req.url).pathname;
  const active = currentSection(path);
  return (
    <header class="site">
      <a class="brand" href="/dashboard">
        {session.workspace_name}
      </a>
      <nav aria-label="Dashboard">
        <ul>
          {SECTIONS.filter((s) => hasRole(session.role, s.role)).map((s) => (
            <li>
              <a href={s.href} aria-current={s.href === active ? "page" : undefined}>
                {s.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="account">
        <a href="/dashboard/account" aria-current={path === "/dashboard/account" ? "page" : undefined}>
          {session.email}
        </a>{" "}
        <span class="badge">{session.role}</span>
        <form method="post" action="/dashboard/sign-out" class="inline">
          <button type="submit" class="link">
            Sign out
          </button>
        </form>
      </div>
    </header>
  );
}

export const layout = jsxRenderer<DashboardEnv>(({ children, title }, c) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <title>{`${title} · Messaging gateway`}</title>
      <link rel="stylesheet" href="/static/dashboard/dashboard.css" />
      <link rel="icon" href="/static/dashboard/favicon.svg" type="image/svg+xml" />
      <script src="/static/dashboard/dashboard.js" defer></script>
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header c={c as Context<DashboardEnv>} />
      <main id="main">
        <FlashMessage flash={(c as Context<DashboardEnv>).get("flash")} />
        {children}
      </main>
    </body>
  </html>
));
