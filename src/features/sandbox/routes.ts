import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, jsonRequestBody, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { TextContent } from "../../domain/send-request";
import { E164_DIGITS } from "../../messages/recipient";
import { getConnectedNumber, type ChannelNumberRow } from "../../db/channel-numbers";
import { receiveMessages } from "../../engine/operator-events";
import { readMessageAs } from "../../engine/messages";
import { toMessageViewV2 } from "../../messages/message-v2";
import { ApiError, foundOr404 } from "../../lib/errors";
import { now } from "../../lib/clock";
import { jsonBody } from "../../middleware/json-body";
import { auditApi } from "../audit/api-audit";
import type { Context } from "hono";
import type { AppEnv } from "../../context";

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

/**
 * A user's answer to a message of yours, as API v2 simulates it (the operator's limits: reply
 * buttons' ids up to 256 characters and titles up to 20, list rows' 200 and 24, a row's
 * description 72; "Interactive reply buttons messages" and "Interactive list messages").
 */
const SimulatedAnswer = z
  .discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("button_reply"),
      id: z.string().min(1).max(256).openapi({ example: "confirm" }),
      title: z.string().min(1).max(20).openapi({ example: "Confirm" }),
    }),
    z.strictObject({
      type: z.literal("list_reply"),
      id: z.string().min(1).max(200).openapi({ example: "slot-9" }),
      title: z.string().min(1).max(24).openapi({ example: "9:00" }),
      description: z.string().min(1).max(72).optional().openapi({ example: "Friday morning" }),
    }),
    // A template's quick-reply button: `id` is its payload, `title` its text (up to 25 characters).
    z.strictObject({
      type: z.literal("button"),
      id: z.string().min(1).max(256).openapi({ example: "STOP_PROMOS" }),
      title: z.string().min(1).max(25).openapi({ example: "Stop promotions" }),
    }),
  ])
  .openapi("SandboxSimulatedAnswer", {
    description:
      "The button or list row the user chose: `button_reply` (a reply button), `list_reply` (a list row), or `button` (a " +
      "template's quick-reply button: `id` is its payload, `title` its text).",
  });

const InjectInboundV2 = z
  .strictObject({
    channelNumberId: InjectInbound.shape.channelNumberId,
    from: InjectInbound.shape.from,
    text: TextContent.optional().openapi({ description: "A text message; or `answer`." }),
    answer: SimulatedAnswer.optional(),
    replyTo: z
      .string()
      .uuid()
      .optional()
      .openapi({
        description:
          "With `answer`: the message of yours it answers (its `jobId`: sent to `from` from this number), as the " +
          "answer's `replyTo`.",
        example: EXAMPLE.jobId,
      }),
  })
  .superRefine((r, ctx) => {
    if ((r.text === undefined) === (r.answer === undefined))
      ctx.addIssue({
        code: "custom",
        path: r.text === undefined ? ["text"] : ["answer"],
        message: "Send exactly one of text and answer.",
        params: { rule: "exactly_one" },
      });
    if (r.replyTo !== undefined && r.answer === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["replyTo"],
        message: "replyTo goes with an answer.",
        params: { rule: "with_answer" },
      });
  })
  .openapi("SandboxInboundRequestV2");

const injectV2 = createRoute({
  ...inject,
  summary: "Sandbox only: simulate a user writing to a sandbox number, or answering your buttons or list",
  description:
    `${inject.description} In v2 the user can also answer a message of yours: \`answer\` names the reply button, list ` +
    "row or template button they chose, and `replyTo` the message it answers; the `message.received` event and the " +
    "message then carry it as `answer` (and `replyTo`), as a real answer does.",
  request: {
    body: jsonRequestBody(InjectInboundV2, {
      channelNumberId: EXAMPLE.channelNumberId,
      from: EXAMPLE.contact,
      answer: { type: "button_reply", id: "confirm", title: "Confirm" },
      replyTo: EXAMPLE.jobId,
    }),
  },
});

/** The sandbox number of the caller's workspace named in the body: 404 for none, 403 for a live number. */
async function sandboxNumber(c: Context<AppEnv>, channelNumberId: string): Promise<ChannelNumberRow> {
  const number = foundOr404(
    await getConnectedNumber(c.env.DB, c.get("principal").workspaceId, channelNumberId),
    "Channel number",
  );
  if (number.upstream_type !== "sandbox")
    throw new ApiError("forbidden", "Inbound messages can only be injected on sandbox numbers.");
  return number;
}

/** What a simulated message is made of, as the operator's webhook would carry it. */
interface Simulated {
  type: string;
  text: string | null;
  content: Record<string, unknown> | null;
  details: Record<string, unknown> | null;
}

/** Records the simulated message as a real one (its event, the sender's window) and answers 202. */
async function injected(c: Context<AppEnv>, number: ChannelNumberRow, from: string, m: Simulated) {
  const at = now();
  const [messageId] = await receiveMessages(c.env, { id: number.id, workspaceId: number.workspace_id }, [
    {
      record: {
        channelNumberId: number.id,
        upstreamMessageId: `sandbox.in.${crypto.randomUUID()}`,
        from,
        type: m.type,
        text: m.text,
        content: m.content,
        details: m.details,
        at,
      },
      contact: { from, at },
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
}

/**
 * The operator's id of the message an answer replies to: one of the workspace's, sent to `from`
 * from `number`; an interactive one only by one of its own buttons or rows, as on a phone.
 */
async function answered(
  c: Context<AppEnv>,
  number: ChannelNumberRow,
  from: string,
  replyTo: string,
  answer: z.infer<typeof SimulatedAnswer>,
): Promise<string> {
  const found = await readMessageAs(c.env, number.workspace_id, replyTo, toMessageViewV2);
  const refuse = (rule: string, message: string, path = "replyTo") =>
    new ApiError("invalid_request", "The answer is not one this user could give.", {
      details: [{ path, rule, message }],
    });
  if (!found) throw refuse("unknown_message", "No message of your workspace has this id.");
  const m = found.message;
  if (m.direction !== "outbound" || m.channelNumberId !== number.id || m.to !== from)
    throw refuse("not_sent_to_sender", "Name a message this number sent to `from`.");
  if (m.upstreamMessageId === null) throw refuse("not_sent", "The message has not reached the operator yet.");
  const choices =
    m.interactive?.type === "button"
      ? { type: "button_reply", options: m.interactive.buttons }
      : m.interactive?.type === "list"
        ? { type: "list_reply", options: m.interactive.sections.flatMap((s) => s.rows) }
        : m.interactive
          ? { type: "none", options: [] }
          : null;
  if (choices) {
    const chosen = choices.options.find((o) => o.id === answer.id);
    if (answer.type !== choices.type || !chosen || chosen.title !== answer.title)
      throw refuse(
        "no_such_choice",
        choices.options.length === 0
          ? "This message offers nothing to choose."
          : `Choose one of the message's ${choices.type === "button_reply" ? "buttons" : "rows"} (type ${choices.type}): ` +
              choices.options.map((o) => `${o.id} "${o.title}"`).join(", ") +
              ".",
        "answer",
      );
  }
  return m.upstreamMessageId;
}

/** The operator's message part of a simulated answer (its `interactive` object, or a template button's). */
function answerContent(a: z.infer<typeof SimulatedAnswer>): Pick<Simulated, "type" | "content"> {
  if (a.type === "button") return { type: "button", content: { payload: a.id, text: a.title } };
  const { type, ...part } = a;
  return { type: "interactive", content: { type, [type]: part } };
}

export const sandboxRoutes = newRouter().openapi(inject, async (c) => {
  const body = c.req.valid("json");
  const number = await sandboxNumber(c, body.channelNumberId);
  return injected(c, number, body.from, { type: "text", text: body.text.body, content: null, details: null });
});

/** v2's: v1's, and answers to buttons and lists. */
export const sandboxRoutesV2 = newRouter().openapi(injectV2, async (c) => {
  const body = c.req.valid("json");
  const number = await sandboxNumber(c, body.channelNumberId);
  if (body.text)
    return injected(c, number, body.from, { type: "text", text: body.text.body, content: null, details: null });
  const answer = body.answer!;
  const upstreamMessageId =
    body.replyTo === undefined ? null : await answered(c, number, body.from, body.replyTo, answer);
  return injected(c, number, body.from, {
    ...answerContent(answer),
    text: null,
    details: upstreamMessageId === null ? null : { replyTo: { upstreamMessageId } },
  });
});
