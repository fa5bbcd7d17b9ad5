import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { config } from "./config";
import type { AppEnv } from "./context";
import { ApiError, errorBody, type ErrorCode } from "./lib/errors";
import { log } from "./lib/log";
import { newRouter, registerSharedComponents } from "./lib/openapi";
import { allowedMethods } from "./lib/allowed-methods";
import { closestRoute } from "./lib/closest-route";
import { requestId } from "./middleware/access-log";
import { serverTiming } from "./middleware/server-timing";
import { securityHeaders } from "./middleware/security-headers";
import { apiKeyAuth } from "./middleware/api-key-auth";
import { perKeyLimits } from "./middleware/rate-limit";
import { keyRoleGate } from "./middleware/key-role";
import { adminAuth } from "./middleware/admin-auth";
import { meRoutes } from "./routes/me";
import { channelNumberRoutes } from "./features/numbers/routes";
import { channelNumberChangeRoutes } from "./features/numbers/change-routes";
import { usageRoutes } from "./features/usage/routes";
import { webhookRoutes } from "./features/webhooks/routes";
import { messageRoutes } from "./routes/messages";
import { messageArchiveRoutes } from "./routes/message-archives";
import { messageMediaRoutes } from "./routes/message-media";
import { sandboxRoutes } from "./features/sandbox/routes";
import { sandboxTestContactRoutes } from "./features/sandbox/test-contact-routes";
import { docsRoutes } from "./routes/docs";
import { operatorWebhookRoutes } from "./routes/operator-webhook";
import { adminWorkspaceRoutes } from "./routes/admin/workspaces";
import { adminApiKeyRoutes } from "./features/api-keys/admin-routes";
import { adminChannelNumberRoutes } from "./features/numbers/admin-routes";
import { adminMemberRoutes } from "./features/members/admin-routes";
import { dashboard } from "./dashboard/app";
import { adminSecretRoutes } from "./routes/admin/secrets";
import { adminDevRoutes } from "./routes/admin/dev";
import { registerEventDocs } from "./routes/event-docs";
import { publicApiV2 } from "./routes/v2/api";

const CODE_FOR_STATUS: Partial<Record<number, ErrorCode>> = {
  400: "invalid_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "idempotency_conflict",
  429: "rate_limit_exceeded",
};

/** The public API (`/api/v1`): every route except the OpenAPI document needs an API key. */
export const publicApi = newRouter();
publicApi.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
  type: "http",
  scheme: "bearer",
  description: "An API key: `msg_live_…` (the prefix is per deployment).",
});
registerSharedComponents(publicApi.openAPIRegistry);
registerEventDocs(publicApi.openAPIRegistry);
publicApi.doc31("/openapi.json", {
  openapi: "3.1.0",
  info: {
    title: "Messaging API",
    version: "1.0.0",
    description:
      "Send and receive text messages over a business chat channel. Every response carries X-Request-Id; every error uses one envelope: " +
      '`{"error": {"code", "message", "requestId", "details"?}}`.',
    // The contract itself is MIT-licensed so that clients generated from it can be shipped freely.
    license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
  },
  servers: [{ url: "/api/v1", description: "This deployment" }],
  tags: [
    { name: "Messages", description: "Send text messages and follow their delivery." },
    {
      name: "Channel numbers",
      description: "The numbers your workspace sends from, and the customer-service window per contact.",
    },
    { name: "Webhooks", description: "Where we POST your events; delivery log, replay and test events." },
    { name: "Account", description: "The API key's workspace and the plan usage of the month." },
    { name: "Sandbox", description: "Sandbox-only helpers to exercise an integration end to end." },
  ],
});
publicApi.use("*", async (c, next) => (c.req.path === "/api/v1/openapi.json" ? next() : apiKeyAuth(c, next)));
publicApi.use("*", async (c, next) => (c.req.path === "/api/v1/openapi.json" ? next() : perKeyLimits(c, next)));
const keyRoles = keyRoleGate(publicApi, "/api/v1");
publicApi.use("*", async (c, next) => (c.req.path === "/api/v1/openapi.json" ? next() : keyRoles(c, next)));
publicApi
  .route("/", meRoutes)
  .route("/", channelNumberRoutes)
  .route("/", channelNumberChangeRoutes)
  .route("/", usageRoutes)
  .route("/", webhookRoutes)
  .route("/", messageRoutes)
  .route("/", messageMediaRoutes)
  .route("/", messageArchiveRoutes)
  .route("/", sandboxRoutes)
  .route("/", sandboxTestContactRoutes);

/** The admin API (`/admin/v1`) of whoever runs the service, behind ADMIN_TOKEN; not part of the public document. */
const adminApi = newRouter();
adminApi.use("*", adminAuth);
adminApi
  .route("/", adminWorkspaceRoutes)
  .route("/", adminApiKeyRoutes)
  .route("/", adminChannelNumberRoutes)
  .route("/", adminMemberRoutes)
  .route("/", adminSecretRoutes)
  .route("/", adminDevRoutes);

export const app = new Hono<AppEnv>();
app.use("*", requestId);
// A Worker has no start-up hook that could refuse to boot: a var with an unusable value
// fails every request instead (500, logged with the var's name), not only the ones that read it.
app.use("*", async (c, next) => {
  config(c.env);
  await next();
});
app.use("*", securityHeaders);
app.use("*", serverTiming);
app.route("/api/v1", publicApi);
app.route("/api/v2", publicApiV2);
app.route("/admin/v1", adminApi);
app.route("/docs", docsRoutes);
// The operator calls this path as configured in its app settings: it keeps the old word "upstream".
app.route("/upstream", operatorWebhookRoutes);
app.route("/dashboard", dashboard);
// The root only points to the reference: a browser goes there, a client gets the addresses.
app.get("/", (c) => {
  c.header("Link", '</docs>; rel="service-doc", </api/v1/openapi.json>; rel="service-desc"');
  if (c.req.header("accept")?.includes("text/html")) return c.redirect("/docs", 302);
  return c.json({ name: "Messaging API", docs: "/docs", openapi: "/api/v1/openapi.json", api: "/api/v1" }, 200);
});

app.notFound((c) => {
  // A known path with another method is 405 with the methods it has, not 404.
  const allow = allowedMethods(app.routes, c.req.path);
  if (allow.length > 0) {
    c.header("Allow", allow.join(", "));
    return c.json(
      errorBody(
        "method_not_allowed",
        `${c.req.method} is not allowed here. Allowed: ${allow.join(", ")}.`,
        c.get("requestId"),
      ),
      405,
    );
  }
  // A typo gets the route it most likely meant, so the fix is in the answer itself.
  const near = closestRoute(app.routes, c.req.path);
  const hint = near ? ` Did you mean ${near.methods.join(", ")} ${near.path}?` : " The routes are listed at /docs.";
  return c.json(
    errorBody("not_found", `No such route: ${c.req.method} ${c.req.path.slice(0, 200)}.${hint}`, c.get("requestId")),
    404,
  );
});

app.onError((err, c) => {
  const id = c.get("requestId");
  if (err instanceof ApiError) {
    for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
    return c.json(errorBody(err.code, err.message, id, err.details), err.status as ContentfulStatusCode);
  }
  if (err instanceof HTTPException && err.status < 500) {
    // Hono's own refusals (for example malformed JSON) keep their status in our envelope.
    const code = CODE_FOR_STATUS[err.status] ?? "invalid_request";
    const message = err.status === 400 ? "The request body is not valid JSON." : err.message;
    return c.json(errorBody(code, message, id), err.status as ContentfulStatusCode);
  }
  log("error", "unhandled error", {
    requestId: id,
    error: err instanceof Error ? err.name : "unknown",
    detail: err instanceof Error ? err.message : String(err),
  });
  return c.json(
    errorBody("internal_error", "Something went wrong on our side. Quote the requestId to support.", id),
    500,
  );
});
