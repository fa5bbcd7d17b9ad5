import { dayString } from "./archive-keys";

/**
 * Where copies of a workspace's inbound media live in R2 (the archive bucket, beside `messages/`):
 * one folder per UTC day of the messages, one object per message, named by its id. A day's folder
 * is deleted when the day leaves the plan's history window (media-copies.ts), listed by its prefix:
 * nothing else in the bucket is read to find it.
 */
export const mediaWorkspacePrefix = (workspaceId: string): string => `media/${workspaceId}/`;
export const mediaDayPrefix = (workspaceId: string, day: number): string =>
  `${mediaWorkspacePrefix(workspaceId)}${dayString(day)}/`;
export const mediaKey = (workspaceId: string, day: number, messageId: string): string =>
  `${mediaDayPrefix(workspaceId, day)}${messageId}`;
