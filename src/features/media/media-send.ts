import type { OutboundContent } from "../../messages/content";
import { mediaContent, type MediaKind, type MediaRequest } from "../../messages/kinds/media";
import type { SendRefusal } from "../../messages/send";
import { keptFile } from "./stored-file";

/**
 * What a media send by `mediaId` records, or why it is refused before anything is queued: the
 * workspace's file, still kept (unknown, another workspace's, deleted or expired: rule
 * `unknown_media`), of the message's kind (an image file for `type: image`…: rule `media_kind`).
 */
export async function storedMediaContent(
  env: Pick<Env, "DB">,
  workspaceId: string,
  kind: MediaKind,
  request: MediaRequest & { mediaId: string },
): Promise<OutboundContent | SendRefusal> {
  const refuse = (rule: string, message: string): SendRefusal => ({
    refused: { code: "invalid_request", message, details: [{ path: `${kind}.mediaId`, rule, message }] },
  });
  const file = await keptFile(env, workspaceId, request.mediaId);
  if (!file.kept)
    return refuse(
      "unknown_media",
      "No file with this id in the workspace's media store (deleted, expired, or never uploaded): upload it with POST /media.",
    );
  const { media } = file;
  if (media.kind !== kind)
    return refuse(
      "media_kind",
      `This file is a ${media.kind} (${media.contentType}); it cannot be sent as type ${kind}.`,
    );
  return mediaContent(kind, { ...request, mediaId: media.id }, media.filename);
}
