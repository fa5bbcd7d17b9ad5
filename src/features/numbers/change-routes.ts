import { createRoute, z } from "@hono/zod-openapi";
import {
  bearerSecurity,
  errorResponses,
  jsonContent,
  jsonRequestBody,
  newRouter,
  requestIdHeader,
} from "../../lib/openapi";
import { ChannelNumberDetail } from "../../domain/channel-number-view";
import { numberDetail } from "./number-detail";
import { connectNumber } from "./connect-number";
import { disconnectNumber } from "./disconnect-number";
import { replaceNumberToken } from "./replace-token";
import { operatorError } from "../../routes/operator-refusal";
import { ApiError, notFound } from "../../lib/errors";
import { jsonBody } from "../../middleware/json-body";
import { noStore } from "../../middleware/security-headers";
import { limitHeaders, throwIfLimited } from "../../middleware/rate-limit";
import { auditApi } from "../audit/api-audit";
import { auditClaimedAway } from "./claimed-away";
import { apiCaller } from "../../routes/caller";
import { HEALTH_EXAMPLE, NUMBER_EXAMPLE, NumberId } from "./routes";

// Partners connect, re-key and disconnect their own numbers.
// The domain operations are the dashboard's too, limits included.

const AccessToken = z
  .string()
  .min(16)
  .max(4096)
  .openapi({ description: "The operator's access token; stored encrypted, never returned." });
const Digits = (what: string) => z.string().regex(/^\d{1,32}$/, { error: `${what} is the operator's numeric id.` });

const ConnectRequest = z
  .strictObject({
    displayPhoneNumber: z
      .string()
      .regex(/^\+?\d{4,32}$/, { error: "displayPhoneNumber must be digits, optionally with a leading '+'." })
      .optional()
      .openapi({ description: "Sandbox numbers only (required there); a live number's comes from the operator." }),
    upstream: z.discriminatedUnion("type", [
      z.strictObject({ type: z.literal("sandbox") }),
      z.strictObject({
        type: z.literal("cloud"),
        phoneNumberId: Digits("phoneNumberId"),
        wabaId: Digits("wabaId"),
        accessToken: AccessToken,
      }),
    ]),
  })
  .openapi("ConnectChannelNumberRequest");

const ReplaceTokenRequest = z.strictObject({ accessToken: AccessToken }).openapi("ReplaceChannelNumberTokenRequest");

const CONNECTED_EXAMPLE = {
  ...NUMBER_EXAMPLE,
  displayPhoneNumber: "+15557770000",
  upstream: "cloud" as const,
  sending: { state: "active" as const, pausedSince: null, nextAttemptAt: null, reason: null },
  health: {
    ...HEALTH_EXAMPLE,
    sendsToday: 0,
    verifiedName: "Acme Shop",
    qualityRating: "GREEN",
    messagingLimitTier: "TIER_1K",
    checkedAt: NUMBER_EXAMPLE.createdAt,
  },
};

const connect = createRoute({
  method: "post",
  path: "/channel-numbers",
  "x-key-role": "owner",
  operationId: "connectChannelNumber",
  tags: ["Channel numbers"],
  summary: "Connect a number (extension)",
  description:
    "A sandbox number is connected at once. A live number is connected only after the operator confirmed, with the access token, " +
    "the phone number id, that it belongs to the business account (`wabaId`), and subscribed this app to the account's webhooks; " +
    "otherwise nothing is stored and the error names the field and the operator's reason. Whether the number is connected elsewhere is " +
    "said only after that (400 on `upstream.phoneNumberId`); a number connected elsewhere with a token the operator now refuses " +
    "(`health.unverifiedSince`) is taken over: it is disconnected there and connected here. The plan's maximum of connected numbers applies. " +
    "Limited to 30 number changes (connect, token replacement, disconnect) per hour per workspace.",
  security: bearerSecurity,
  middleware: [noStore, jsonBody] as const,
  request: {
    body: jsonRequestBody(ConnectRequest, {
      upstream: {
        type: "cloud",
        phoneNumberId: "106540352242922",
        wabaId: "102290129340398",
        accessToken: "EAAGexampleAccessToken0123456789",
      },
    }),
  },
  responses: {
    201: jsonContent(
      ChannelNumberDetail,
      "Connected: the number, with what the operator said about it.",
      CONNECTED_EXAMPLE,
    ),
    ...errorResponses(400, 401, 403, 429, 500),
  },
});

const replaceToken = createRoute({
  method: "patch",
  path: "/channel-numbers/{id}",
  "x-key-role": "owner",
  operationId: "replaceChannelNumberToken",
  tags: ["Channel numbers"],
  summary: "Replace a live number's access token (extension)",
  description:
    "The operator must confirm the new token controls the number (and its business account) before it replaces the old one. " +
    "A number paused by a refused token sends again at once.",
  security: bearerSecurity,
  middleware: [noStore, jsonBody] as const,
  request: {
    params: z.object({ id: NumberId }),
    body: jsonRequestBody(ReplaceTokenRequest, { accessToken: "EAAGexampleAccessToken0123456789" }),
  },
  responses: {
    200: jsonContent(ChannelNumberDetail, "The number with its new token in use.", CONNECTED_EXAMPLE),
    ...errorResponses(400, 401, 403, 404, 429, 500),
  },
});

const disconnect = createRoute({
  method: "delete",
  path: "/channel-numbers/{id}",
  "x-key-role": "owner",
  operationId: "disconnectChannelNumber",
  tags: ["Channel numbers"],
  summary: "Disconnect a number (extension)",
  description:
    "New sends naming the number are refused at once (`channelNumberId` unknown). Messages still queued on it end `failed` with " +
    "`number_disconnected`, each with its `message.status` webhook event. The number then reads as unknown (404).",
  security: bearerSecurity,
  request: { params: z.object({ id: NumberId }) },
  responses: { 204: { description: "Disconnected.", headers: requestIdHeader }, ...errorResponses(401, 403, 404, 429) },
});

export const channelNumberChangeRoutes = newRouter()
  .openapi(connect, async (c) => {
    const body = c.req.valid("json");
    if (body.upstream.type === "sandbox" && !body.displayPhoneNumber) {
      throw new ApiError("invalid_request", "A sandbox number needs displayPhoneNumber.", {
        details: [{ path: "displayPhoneNumber", rule: "required", message: "Required for a sandbox number." }],
      });
    }
    if (body.upstream.type === "cloud" && body.displayPhoneNumber) {
      throw new ApiError("invalid_request", "A live number's display number comes from the operator.", {
        details: [{ path: "displayPhoneNumber", rule: "not_allowed", message: "Leave it out for a live number." }],
      });
    }
    const input =
      body.upstream.type === "sandbox"
        ? { type: "sandbox" as const, displayPhoneNumber: body.displayPhoneNumber ?? "" }
        : body.upstream;
    const outcome = await connectNumber(c.env, apiCaller(c), input);
    throwIfLimited(outcome);
    if (!outcome.ok)
      throw outcome.problem === "plan_limit" ? new ApiError("forbidden", outcome.reason) : operatorError(outcome);
    limitHeaders(c, outcome.limit);
    await auditApi(c, {
      action: outcome.claimedFrom ? "channel_number.claimed" : "channel_number.connected",
      target: { type: "channel_number", id: outcome.row.id },
      detail: `${outcome.row.upstream_type} ${outcome.row.display_phone_number}`,
    });
    if (outcome.claimedFrom) await auditClaimedAway(c.env.DB, outcome.claimedFrom, c.get("requestId"));
    return c.json(await numberDetail(c.env, outcome.row, { refresh: false }), 201);
  })
  .openapi(replaceToken, async (c) => {
    const { id } = c.req.valid("param");
    const { accessToken } = c.req.valid("json");
    const outcome = await replaceNumberToken(c.env, apiCaller(c), id, accessToken);
    throwIfLimited(outcome);
    if (!outcome.ok) {
      if (outcome.problem === "not_found") throw notFound("Channel number");
      if (outcome.problem === "sandbox") {
        throw new ApiError("invalid_request", "Only live (cloud) numbers have an access token.", {
          details: [{ path: "path.id", rule: "cloud_number", message: "This is a sandbox number." }],
        });
      }
      throw operatorError(outcome);
    }
    limitHeaders(c, outcome.limit);
    await auditApi(c, {
      action: "channel_number.credentials_replaced",
      target: { type: "channel_number", id: outcome.row.id },
      detail: outcome.row.display_phone_number,
    });
    return c.json(await numberDetail(c.env, outcome.row, { refresh: false }), 200);
  })
  .openapi(disconnect, async (c) => {
    const { id } = c.req.valid("param");
    const outcome = await disconnectNumber(c.env, apiCaller(c), id);
    throwIfLimited(outcome);
    if (!outcome.ok) throw notFound("Channel number");
    limitHeaders(c, outcome.limit);
    await auditApi(c, {
      action: "channel_number.disconnected",
      target: { type: "channel_number", id: outcome.row.id },
      detail: outcome.row.display_phone_number,
    });
    return c.body(null, 204);
  });
