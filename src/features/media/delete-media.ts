import { bucket, scopes } from "../../domain/abuse-limits";
import { spend, type RateLimited } from "../../domain/limit-check";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { deleteUploadedMedia, findUploadedMedia } from "../../db/uploaded-media";
import { uploadKey } from "../../messages/uploaded-media";

export type DeleteOutcome = { deleted: boolean; limit: ThrottleDecision } | RateLimited;

/**
 * Deletes a file of the workspace: its bytes first, then its row (with the operator's ids of it),
 * so that a failure between the two leaves a row a repeated DELETE finishes, never bytes without a
 * row. Spends the workspace's media budget, as an upload does. `id` null: not an id we issue.
 */
export async function deleteMedia(env: Env, workspaceId: string, id: string | null): Promise<DeleteOutcome> {
  const spec = bucket("mediaChange");
  const spent = await spend(
    env,
    scopes.workspace(workspaceId),
    [spec],
    `media uploads and deletions: ${spec.limit} per ${spec.periodSeconds} s per workspace`,
  );
  if (!spent.ok) return spent;
  if (id === null || !(await findUploadedMedia(env.DB, workspaceId, id)))
    return { deleted: false, limit: spent.decision };
  await env.ARCHIVE.delete(uploadKey(workspaceId, id));
  return { deleted: await deleteUploadedMedia(env.DB, workspaceId, id), limit: spent.decision };
}
