import { DAY_MS } from "../../lib/job-id";

/** `YYYY-MM-DD` of a UTC day number. */
export const dayString = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The UTC day number of `YYYY-MM-DD`, or null when it is not a real date. */
export function dayNumber(text: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text ? null : ms / DAY_MS;
}

/**
 * Where a workspace's archived messages live in R2: one folder per UTC day with
 * gzip-compressed NDJSON parts (one message per line, as messages/archive-line.ts
 * writes it) and a manifest written last, which marks the day complete.
 */
export const archivePrefix = (workspaceId: string): string => `messages/${workspaceId}/`;
export const dayPrefix = (workspaceId: string, day: number): string =>
  `${archivePrefix(workspaceId)}${dayString(day)}/`;
export const partKey = (workspaceId: string, day: number, part: number): string =>
  `${dayPrefix(workspaceId, day)}part-${String(part).padStart(5, "0")}.ndjson.gz`;
export const manifestKey = (workspaceId: string, day: number): string => `${dayPrefix(workspaceId, day)}manifest.json`;

export interface ArchiveManifest {
  day: string;
  parts: number;
  messages: number;
  archivedAt: string;
}
