import { newRouter, registerSharedComponents } from "../../lib/openapi";
import { V2_ONLY_ERROR_CODES } from "../../lib/errors";
import { apiKeyAuth } from "../../middleware/api-key-auth";
import { perKeyLimits } from "../../middleware/rate-limit";
import { keyRoleGate } from "../../middleware/key-role";
import { meRoutes } from "../me";
import { channelNumberRoutes } from "../../features/numbers/routes";
import { channelNumberChangeRoutes } from "../../features/numbers/change-routes";
import { usageRoutes } from "../../features/usage/routes";
import { ConfigureWebhookResponse, Webhook, WebhookList, webhookRoutesV2 } from "../../features/webhooks/routes";
import { MessageList, messageEventRoutes } from "../messages";
import { Message } from "../../messages/message";
import { MessageStatusData } from "../../messages/events";
import { messageArchiveRoutesV2 } from "../message-archives";
import { messageMediaRoutes } from "../message-media";
import { sandboxRoutesV2 } from "../../features/sandbox/routes";
import { sandboxTestContactRoutes } from "../../features/sandbox/test-contact-routes";
import { registerEventDocs } from "../event-docs";
import { messageRoutesV2 } from "./messages";
import { readMarkRoutes } from "./read-marks";
import { templateRoutes } from "../../features/templates/routes";
import { mediaRoutes } from "../../features/media/routes";

const DOCUMENT_PATH = "/api/v2/openapi.json";

/**
 * The public API v2 (`/api/v2`): v1's resources, handlers, auth, limits, errors and idempotency
 * (the same routers, mounted again), with template messages in `POST /messages`, a `type` filter
 * on `GET /messages`, and `GET /templates`. v1 is unchanged beside it.
 */
export const publicApiV2 = newRouter();
publicApiV2.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
  type: "http",
  scheme: "bearer",
  description: "An API key: `msg_live_…` (the prefix is per deployment). The same keys as v1.",
});
registerSharedComponents(publicApiV2.openAPIRegistry);
registerEventDocs(publicApiV2.openAPIRegistry, 2);
// v1's message views stay in v2's document (it changes only by addition; clients built on them keep
// compiling), beside the v2 views its message routes answer with (MessageV2, MessageListV2).
publicApiV2.openAPIRegistry.register("Message", Message);
publicApiV2.openAPIRegistry.register("MessageList", MessageList);
// The same for v1's webhook views and status events, beside v2's (WebhookV2, MessageStatusEventDataV2).
publicApiV2.openAPIRegistry.register("Webhook", Webhook);
publicApiV2.openAPIRegistry.register("WebhookList", WebhookList);
publicApiV2.openAPIRegistry.register("ConfigureWebhookResponse", ConfigureWebhookResponse);
publicApiV2.openAPIRegistry.register("MessageStatusEventData", MessageStatusData);
const DOCUMENT: Parameters<typeof publicApiV2.getOpenAPI31Document>[0] = {
  openapi: "3.1.0",
  info: {
    title: "Messaging API",
    version: "2.0.0",
    description:
      "Version 2: everything of version 1 (`/api/v1`, unchanged), plus template messages (`POST /messages` with " +
      "`type: template`), media by link, interactive, location, contacts and reaction messages, the templates your numbers can send (`GET /templates`), a `type` filter on message lists, and " +
      "`delivered` and `read` as statuses of their own (in views, list filters, and the events of webhooks configured " +
      "through `/api/v2/webhooks`). " +
      "Every response carries X-Request-Id; every error uses one envelope: " +
      '`{"error": {"code", "message", "requestId", "details"?}}`.',
    license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
  },
  servers: [{ url: "/api/v2", description: "This deployment" }],
  tags: [
    {
      name: "Messages",
      description:
        "Send text, template, media, interactive, location, contacts and reaction messages and follow their delivery.",
    },
    {
      name: "Templates",
      description: "Templates approved by the operator for your numbers' business accounts, and the sandbox's own.",
    },
    {
      name: "Channel numbers",
      description: "The numbers your workspace sends from, and the customer-service window per contact.",
    },
    { name: "Webhooks", description: "Where we POST your events; delivery log, replay and test events." },
    { name: "Account", description: "The API key's workspace and the plan usage of the month." },
    { name: "Sandbox", description: "Sandbox-only helpers to exercise an integration end to end." },
    { name: "Media", description: "Files uploaded once and sent by id: kept 30 days, streamed to the operator." },
  ],
};

/** The document with v2's own error codes in the error envelope's `code` (v1's lists only its own). */
function withV2ErrorCodes<T extends object>(document: T): T {
  const code = (document as { components?: { schemas?: Record<string, unknown> } }).components?.schemas?.Error as
    { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } } | undefined;
  const codes = code?.properties?.error?.properties?.code;
  if (!codes?.enum) throw new Error("the v2 document has no error code enum");
  codes.enum = [...codes.enum, ...V2_ONLY_ERROR_CODES.filter((c) => !codes.enum?.includes(c))];
  return document;
}

publicApiV2.get("/openapi.json", (c) => c.json(withV2ErrorCodes(publicApiV2.getOpenAPI31Document(DOCUMENT))));
publicApiV2.use("*", async (c, next) => (c.req.path === DOCUMENT_PATH ? next() : apiKeyAuth(c, next)));
publicApiV2.use("*", async (c, next) => (c.req.path === DOCUMENT_PATH ? next() : perKeyLimits(c, next)));
const keyRoles = keyRoleGate(publicApiV2, "/api/v2");
publicApiV2.use("*", async (c, next) => (c.req.path === DOCUMENT_PATH ? next() : keyRoles(c, next)));
publicApiV2
  .route("/", meRoutes)
  .route("/", channelNumberRoutes)
  .route("/", channelNumberChangeRoutes)
  .route("/", usageRoutes)
  .route("/", webhookRoutesV2)
  .route("/", messageRoutesV2)
  .route("/", messageEventRoutes)
  .route("/", readMarkRoutes)
  .route("/", messageMediaRoutes)
  .route("/", messageArchiveRoutesV2)
  .route("/", sandboxRoutesV2)
  .route("/", sandboxTestContactRoutes)
  .route("/", templateRoutes)
  .route("/", mediaRoutes);
