import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./context";
import { ApiError, errorBody, type ErrorCode } from "./lib/errors";
import { log } from "./lib/log";
import { newRouter } from "./lib/openapi";
import { requestId } from "./middleware/request-id";
import { serverTiming } from "./middleware/server-timing";
import { securityHeaders } from "./middleware/security-headers";
import { apiKeyAuth } from "./middleware/api-key-auth";
import { perKeyLimits } from "./middleware/rate-limit";
import { adminAuth } from "./middleware/admin-auth";
import { meRoutes } from "./routes/me";
import { channelNumberRoutes } from "./routes/channel-numbers";
import { usageRoutes } from "./routes/usage";
import { webhookRoutes } from "./routes/webhooks";
import { messageRoutes } from "./routes/messages";
import { sandboxRoutes } from "./routes/sandbox";
import { docsRoutes } from "./routes/docs";
import { upstreamWebhookRoutes } from "./routes/upstream-webhook";
import { adminWorkspaceRoutes } from "./routes/admin/workspaces";
import { adminApiKeyRoutes } from "./routes/admin/api-keys";
import { adminChannelNumberRoutes } from "./routes/admin/channel-numbers";
import { adminSecretRoutes } from "./routes/admin/secrets";
import { registerEventDocs } from "./routes/event-docs";

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
registerEventDocs(publicApi.openAPIRegistry);
publicApi.doc31("/openapi.json", {
  openapi: "3.1.0",
  info: {
    title: "Messaging API",
    version: "1.0.0",
    description:
      "Send and receive text messages over a business chat channel. Every response carries X-Request-Id; every error uses one envelope: " +
      '`{"error": {"code", "message", "requestId", "details"?}}`.',
  },
  servers: [{ url: "/api/v1" }],
});
publicApi.use("*", async (c, next) => (c.req.path === "/api/v1/openapi.json" ? next() : apiKeyAuth(c, next)));
publicApi.use("*", async (c, next) => (c.req.path === "/api/v1/openapi.json" ? next() : perKeyLimits(c, next)));
publicApi
  .route("/", meRoutes)
  .route("/", channelNumberRoutes)
  .route("/", usageRoutes)
  .route("/", webhookRoutes)
  .route("/", messageRoutes)
  .route("/", sandboxRoutes);

/** The operator's admin API (`/admin/v1`), behind ADMIN_TOKEN; not part of the public document. */
const adminApi = newRouter();
adminApi.use("*", adminAuth);
adminApi
  .route("/", adminWorkspaceRoutes)
  .route("/", adminApiKeyRoutes)
  .route("/", adminChannelNumberRoutes)
  .route("/", adminSecretRoutes);

export const app = new Hono<AppEnv>();
app.use("*", requestId);
app.use("*", securityHeaders);
app.use("*", serverTiming);
app.route("/api/v1", publicApi);
app.route("/admin/v1", adminApi);
app.route("/docs", docsRoutes);
app.route("/upstream", upstreamWebhookRoutes);

app.notFound((c) => c.json(errorBody("not_found", "No such route.", c.get("requestId")), 404));

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
  log("error", "unhandled error", { requestId: id, error: err instanceof Error ? err.name : "unknown", detail: err instanceof Error ? err.message : String(err) });
  return c.json(errorBody("internal_error", "Something went wrong on our side. Quote the requestId to support.", id), 500);
});
