import { Hono } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { log } from "../lib/log";
import type { DashboardEnv } from "./context";
import { formsOnly } from "./forms";
import { pageHeaders } from "./headers";
import { layout } from "./layout";
import { requireSession } from "./session";
import { accountPages } from "../features/sign-in/account-pages";
import { apiKeyPages } from "../features/api-keys/pages";
import { auditPage } from "../features/audit/pages";
import { chooseWorkspacePages } from "../features/sign-in/choose-workspace-pages";
import { crossSitePage, errorPage, notFoundPage } from "./pages/errors";
import { invitationPages } from "../features/members/invitation-pages";
import { mediaPages } from "../features/media/pages";
import { memberPages } from "../features/members/pages";
import { messagePage } from "./pages/message";
import { messagesPage } from "./pages/messages";
import { numberPages } from "../features/numbers/pages";
import { numberChangePages } from "../features/numbers/change-pages";
import { overviewPage } from "./pages/overview";
import { signInPages } from "../features/sign-in/pages";
import { templatePages } from "../features/templates/pages";
import { testContactPages } from "../features/sandbox/test-contact-pages";
import { testMessagePages } from "../features/messages/test-message-pages";
import { webhookPages } from "../features/webhooks/pages";

/**
 * The customer dashboard (`/dashboard`): server-rendered pages over the same
 * domain and db functions as the API. Every state change is a form POST,
 * checked for origin (`hono/csrf`: Origin or Sec-Fetch-Site must be ours) and
 * for the member's role, then redirected (POST-redirect-GET).
 */
export const dashboard = new Hono<DashboardEnv>();

dashboard.use("*", pageHeaders);
dashboard.use("*", layout);
dashboard.use("*", formsOnly);
dashboard.use("*", csrf());

// Public: sign-in and invitation links.
dashboard.route("/", signInPages);
dashboard.route("/", invitationPages);
dashboard.route("/", chooseWorkspacePages);

// Everything else needs a session.
dashboard.use("*", requireSession);
dashboard.route("/", overviewPage);
dashboard.route("/", messagesPage);
dashboard.route("/", messagePage);
dashboard.route("/", mediaPages);
dashboard.route("/", apiKeyPages);
dashboard.route("/", numberPages);
dashboard.route("/", numberChangePages);
dashboard.route("/", testContactPages);
dashboard.route("/", testMessagePages);
dashboard.route("/", templatePages);
dashboard.route("/", webhookPages);
dashboard.route("/", memberPages);
dashboard.route("/", accountPages);
dashboard.route("/", auditPage);
dashboard.all("*", (c) => notFoundPage(c));

dashboard.onError((err, c) => {
  // hono/csrf refuses a cross-site form post with a 403.
  if (err instanceof HTTPException && err.status === 403) return crossSitePage(c);
  log("error", "dashboard error", {
    requestId: c.get("requestId"),
    error: err instanceof Error ? err.name : "unknown",
    detail: err instanceof Error ? err.message : String(err),
  });
  return errorPage(c);
});
