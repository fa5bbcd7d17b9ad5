import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, jsonRequestBody, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { TextContent } from "../../domain/send-request";
import { E164_DIGITS } from "../../messages/recipient";
import { getConnectedNumber } from "../../db/channel-numbers";
import { receiveMessages } from "../../engine/operator-events";
import { ApiError, foundOr404 } from "../../lib/errors";
import { now } from "../../lib/clock";
import { jsonBody } from "../../middleware/json-body";
import { auditApi } from "../audit/api-audit";

const InjectInbound = z
  .strictObject({
    channelNumberId: z.string().uuid().openapi({ description: "A sandbox number of this workspace." }),
    from: z.string().regex(E164_DIGITS, { error: "from must be E.164 digits without '+', for example 5511999998888." }),
    text: TextContent,
  })
  .openapi("SandboxInboundRequest");

const Injected = z
  .object({ messageId: z.string().uuid(), status: z.literal("received") })
  .openapi("SandboxInboundAccepted");

const inject = createRoute({
  method: "post",
  path: "/sandbox/inbound",
  "x-key-role": "developer",
  operationId: "injectSandboxInbound",
  tags: ["Sandbox"],
  summary: "Sandbox only: simulate a user writing to a sandbox number",
  description:
    "Extension for testing integrations: produces a `message.received` event exactly as a real inbound message would, " +
    "and opens the recipient's 24-hour customer-service window. Refused (403) for numbers that are not sandbox numbers.",
  security: bearerSecurity,
  middleware: [jsonBody] as const,
  request: {
    body: jsonRequestBody(InjectInbound, {
      channelNumberId: EXAMPLE.channelNumberId,
      from: EXAMPLE.contact,
      text: { body: "Hi!" },
    }),
  },
  responses: {
    202: jsonContent(Injected, "Recorded; the event is on its way.", {
      messageId: EXAMPLE.inboundMessageId,
      status: "received",
    }),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const sandboxRoutes = newRouter().openapi(inject, async (c) => {
  const body = c.req.valid("json");
  const { workspaceId } = c.get("principal");
  const number = foundOr404(await getConnectedNumber(c.env.DB, workspaceId, body.channelNumberId), "Channel number");
  if (number.upstream_type !== "sandbox")
    throw new ApiError("forbidden", "Inbound messages can only be injected on sandbox numbers.");
  const at = now();
  const [messageId] = await receiveMessages(c.env, { id: number.id, workspaceId }, [
    {
      record: {
        channelNumberId: number.id,
        upstreamMessageId: `sandbox.in.${crypto.randomUUID()}`,
        from: body.from,
        type: "text",
        text: body.text.body,
        content: null,
        at,
      },
      contact: { from: body.from, at },
      moves: [],
    },
  ]);
  // The sender's number is personal data: the entry names the message, not the number.
  await auditApi(c, {
    action: "sandbox.inbound_injected",
    target: { type: "channel_number", id: number.id },
    detail: `message ${messageId}`,
  });
  return c.json({ messageId: messageId!, status: "received" as const }, 202);
});
