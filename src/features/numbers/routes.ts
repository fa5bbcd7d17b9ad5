import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { E164_DIGITS, MAX_USER_ID_LENGTH, USER_ID } from "../../messages/recipient";
import { getConnectedNumber, listConnectedNumbers, type ChannelNumberRow } from "../../db/channel-numbers";
import { ChannelNumber, ChannelNumberDetail } from "../../domain/channel-number-view";
import { numberDetail, toChannelNumberView } from "./number-detail";
import type { NumberHealthView } from "../../domain/number-health";
import { ApiError, foundOr404 } from "../../lib/errors";
import { PaginationQuery, decodeCursor, toPage } from "../../lib/pagination";
import { findByUuid } from "../../lib/job-id";
import { contactWindow } from "../../engine/numbers";

const NumbersList = z
  .object({ data: z.array(ChannelNumber), nextCursor: z.string().nullable() })
  .openapi("NumbersList");

export const NUMBER_EXAMPLE: z.output<typeof ChannelNumber> = {
  id: EXAMPLE.channelNumberId,
  displayPhoneNumber: "+15550001111",
  status: "connected",
  upstream: "sandbox",
  createdAt: EXAMPLE.createdAt,
};

export const HEALTH_EXAMPLE: NumberHealthView = {
  state: "active",
  pausedSince: null,
  pausedReason: null,
  lastOperatorError: null,
  unverifiedSince: null,
  lastOperatorNotice: null,
  verifiedName: null,
  qualityRating: null,
  messagingLimitTier: null,
  checkedAt: null,
  sendsToday: 42,
};

export const NumberId = z
  .string()
  .openapi({ format: "uuid", description: "A channel number id.", example: EXAMPLE.channelNumberId });

const list = createRoute({
  method: "get",
  path: "/channel-numbers",
  "x-key-role": "viewer",
  operationId: "listChannelNumbers",
  tags: ["Channel numbers"],
  summary: "List the workspace's connected numbers",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: {
    200: jsonContent(NumbersList, "Connected numbers, oldest first.", { data: [NUMBER_EXAMPLE], nextCursor: null }),
    ...errorResponses(400, 401, 429),
  },
});

const get = createRoute({
  method: "get",
  path: "/channel-numbers/{id}",
  "x-key-role": "viewer",
  operationId: "getChannelNumber",
  tags: ["Channel numbers"],
  summary: "Get one connected number",
  security: bearerSecurity,
  request: { params: z.object({ id: NumberId }) },
  responses: {
    200: jsonContent(ChannelNumberDetail, "The number, with whether its messages are leaving.", {
      ...NUMBER_EXAMPLE,
      sending: { state: "active", pausedSince: null, nextAttemptAt: null, reason: null },
      health: HEALTH_EXAMPLE,
    }),
    ...errorResponses(401, 404, 429),
  },
});

const ContactWindow = z
  .object({
    phone: z.string().openapi({ description: "The contact as asked: E.164 digits, or a user id." }),
    lastInboundAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({ description: "When this contact last wrote to the number." }),
    windowExpiresAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({ description: "End of the 24-hour customer-service window." }),
    windowOpen: z.boolean().openapi({ description: "Whether a free-form text sent now is inside the window." }),
  })
  .openapi("ContactWindow");

const contact = createRoute({
  method: "get",
  path: "/channel-numbers/{id}/contacts/{phone}",
  "x-key-role": "viewer",
  operationId: "getContactWindow",
  tags: ["Channel numbers"],
  summary: "The customer-service window with one contact",
  description:
    "Extension: the operator only delivers free-form text within 24 hours of the contact's last message; outside it a send " +
    "ends `failed` with `service_window_closed`.",
  security: bearerSecurity,
  request: {
    params: z.object({
      id: NumberId,
      // Checked in the handler, after the number is found (an unknown number is 404 whatever the phone).
      phone: z.string().openapi({
        pattern: `${E164_DIGITS.source}|${USER_ID.source}`,
        description:
          "The contact, E.164 digits without '+', or (extension) a user id as `message.received` gives it in `fromUserId`.",
        example: EXAMPLE.to,
      }),
    }),
  },
  responses: {
    200: jsonContent(ContactWindow, "The window.", {
      phone: EXAMPLE.to,
      lastInboundAt: "2026-11-22T09:12:03.000Z",
      windowExpiresAt: "2026-11-23T09:12:03.000Z",
      windowOpen: true,
    }),
    ...errorResponses(400, 401, 404, 429),
  },
});

/**
 * A connected number of the workspace, or 404: a malformed, foreign or disconnected id is
 * indistinguishable from an unknown one.
 */
export async function ownNumber(db: D1Database, workspaceId: string, id: string): Promise<ChannelNumberRow> {
  return foundOr404(
    await findByUuid(id, (given) => getConnectedNumber(db, workspaceId, given), { asGiven: true }),
    "Channel number",
  );
}

export const channelNumberRoutes = newRouter()
  .openapi(list, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const rows = await listConnectedNumbers(c.env.DB, c.get("principal").workspaceId, limit + 1, decodeCursor(cursor));
    return c.json(
      toPage(rows, limit, (r) => ({ sortKey: r.created_at, id: r.id }), toChannelNumberView),
      200,
    );
  })
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const row = await ownNumber(c.env.DB, c.get("principal").workspaceId, id);
    return c.json(await numberDetail(c.env, row, { refresh: true }), 200);
  })
  .openapi(contact, async (c) => {
    const { id, phone } = c.req.valid("param");
    const row = await ownNumber(c.env.DB, c.get("principal").workspaceId, id);
    if (!E164_DIGITS.test(phone) && !(USER_ID.test(phone) && phone.length <= MAX_USER_ID_LENGTH)) {
      throw new ApiError("invalid_request", "phone must be E.164 digits without '+', or a user id.", {
        details: [
          {
            path: "path.phone",
            rule: "e164",
            message: "Digits only, no leading '+' or 0; or a user id exactly as message.received's fromUserId.",
          },
        ],
      });
    }
    return c.json(await contactWindow(c.env, row.id, phone), 200);
  });
