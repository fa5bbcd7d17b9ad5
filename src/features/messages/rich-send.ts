import type { ChannelNumberRow } from "../../db/channel-numbers";
import { getConnectedNumber } from "../../db/channel-numbers";
import { isTestContact } from "../../db/sandbox-test-contacts";
import type { SendMessageRequestV2 } from "../../domain/send-request-v2";
import { contactWindow } from "../../engine/numbers";
import { readMessage } from "../../engine/messages";
import { findByUuid } from "../../lib/job-id";
import type { OutboundContent } from "../../messages/content";
import { reactionContent, type ReactionContent } from "../../messages/kinds/reaction";
import { recipientOf } from "../../messages/recipient";
import type { SendRefusal } from "../../messages/send";
import { SANDBOX_MAGIC_NUMBERS } from "../../operator/sandbox";
import { MEDIA_KINDS, type MediaKind } from "../../messages/kinds/media";
import { storedMediaContent } from "../media/media-send";

const isMediaKind = (type: string): type is MediaKind => (MEDIA_KINDS as readonly string[]).includes(type);

// What a v2 send of a rich kind needs looked up before anything is queued: the number (the
// workspace's, connected), the recipient's 24-hour window, and for a reaction the message it
// reacts to. Each refusal changes nothing: the workspace object answers it once it knows the
// Idempotency-Key is not bound (a replay of an accepted send still answers as a replay).

const MAGIC: ReadonlySet<string> = new Set(Object.values(SANDBOX_MAGIC_NUMBERS));

const notOurs: SendRefusal = {
  refused: { code: "forbidden", message: "channelNumberId is not a connected number of this workspace.", details: [] },
};

/**
 * Whether a free-form message reaches `recipient` now, as the operator decides it: inside 24 hours
 * of their last message (the number object's contacts). A sandbox number also lets its test
 * contacts and its documented magic recipients through, as the operator's test numbers do.
 */
async function windowOpen(env: Env, number: ChannelNumberRow, recipient: string): Promise<boolean> {
  if (
    number.upstream_type === "sandbox" &&
    (MAGIC.has(recipient) || (await isTestContact(env.DB, number.id, recipient)))
  )
    return true;
  return (await contactWindow(env, number.id, recipient)).windowOpen;
}

const windowClosed = (request: SendMessageRequestV2): SendRefusal => ({
  refused: {
    code: "service_window_closed",
    message:
      "The recipient has not written in the last 24 hours: outside the customer-service window only a template " +
      "can be sent (type template).",
    details: [
      {
        path: request.to !== undefined ? "to" : "toUserId",
        rule: "window_closed",
        message: `A ${request.type} message needs the recipient's 24-hour window open (GET /channel-numbers/{id}/contacts/{phone}).`,
      },
    ],
  },
});

/**
 * A reaction's record, once the message it names is found: a message this workspace received on
 * this number from this recipient, which is not itself a reaction (the operator refuses those).
 */
async function reactionOf(
  env: Env,
  workspaceId: string,
  numberId: string,
  request: SendMessageRequestV2,
  reaction: ReactionContent,
): Promise<OutboundContent | SendRefusal> {
  const refuse = (rule: string, message: string): SendRefusal => ({
    refused: {
      code: "invalid_request",
      message: `reaction.messageId: ${message}`,
      details: [{ path: "reaction.messageId", rule, message }],
    },
  });
  const read = await readMessage(env, workspaceId, reaction.messageId);
  const target = read?.message;
  if (!target || target.direction !== "inbound" || target.channelNumberId !== numberId)
    return refuse("unknown", "No message received on this number has this id (GET /messages lists them).");
  if (target.from !== recipientOf(request) && target.fromUserId !== recipientOf(request))
    return refuse("other_recipient", "That message was sent by someone else than this send's recipient.");
  if (target.type === "reaction") return refuse("reaction", "A reaction cannot be reacted to.");
  if (target.upstreamMessageId === null)
    return refuse("no_operator_id", "That message has no operator id to react to.");
  return reactionContent(reaction, target.upstreamMessageId);
}

/**
 * What a v2 send of a kind other than text and template records, or why it is refused: `own` is
 * its content when nothing needed looking up (null for a reaction).
 */
export async function richSendContent(
  env: Env,
  workspaceId: string,
  request: SendMessageRequestV2,
  own: OutboundContent | null,
): Promise<OutboundContent | SendRefusal> {
  const number = await findByUuid(request.channelNumberId, (id) => getConnectedNumber(env.DB, workspaceId, id));
  if (!number) return notOurs;
  let content = own;
  if (request.type === "reaction") {
    if (!request.reaction) throw new Error("a validated reaction send has its reaction");
    const found = await reactionOf(env, workspaceId, number.id, request, request.reaction);
    if ("refused" in found) return found;
    content = found;
  }
  const media = isMediaKind(request.type) ? request[request.type] : undefined;
  if (media?.mediaId !== undefined && isMediaKind(request.type)) {
    const stored = await storedMediaContent(env, workspaceId, request.type, { ...media, mediaId: media.mediaId });
    if ("refused" in stored) return stored;
    content = stored;
  }
  if (!content) throw new Error(`a validated ${request.type} send has its content`);
  if (!(await windowOpen(env, number, recipientOf(request)))) return windowClosed(request);
  return content;
}
