import { z } from "@hono/zod-openapi";
import { ApiError } from "../lib/errors";
import { fromBase64, toBase64Url } from "../lib/crypto";
import { pageLimit } from "../lib/pagination";
import type { MessageRow } from "./record";
import { E164_DIGITS, MAX_USER_ID_LENGTH, USER_ID } from "./recipient";
import { DIRECTIONS, MESSAGE_STATUSES, type Direction, type MessageStatus, type MessageStatusV2 } from "./status";

// The query of GET /messages, the filters and positions of a message list, and which records a
// filter lets through.

const SENDER = /^[A-Za-z0-9._-]{1,160}$/;

/** The fields of GET /messages of every version (v2 widens `status` and adds `type`); `listQueryRules` checks their combinations. */
export const MessageListQueryFields = z.object({
  direction: z
    .enum(DIRECTIONS)
    .optional()
    .openapi({ description: "Only messages sent, or only messages received.", example: "outbound" }),
  status: z
    .enum([...MESSAGE_STATUSES, "received"])
    .optional()
    .openapi({ description: "Outbound statuses, or `received` (every inbound message).", example: "failed" }),
  channelNumberId: z
    .string()
    .uuid({ error: "channelNumberId must be a number id (a UUID)." })
    .optional()
    .openapi({ format: "uuid", example: "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33" }),
  to: z
    .string()
    .max(MAX_USER_ID_LENGTH, { error: `to has more than ${MAX_USER_ID_LENGTH} characters.` })
    .refine((v) => E164_DIGITS.test(v) || USER_ID.test(v), {
      error:
        "to must be E.164 digits without '+', or the user id a send gave as toUserId (e.g. US.13491208655302741918).",
    })
    .optional()
    .openapi({
      description: "Outbound messages to this recipient: E.164 digits, or the user id of sends made with `toUserId`.",
      example: "5511999998888",
    }),
  from: z
    .string()
    .regex(SENDER, { error: "from must be E.164 digits, or the operator's user id of the sender." })
    .optional()
    .openapi({ description: "Inbound messages from this sender.", example: "5511977776666" }),
  createdAfter: z
    .string()
    .datetime({ error: "createdAfter must be an ISO 8601 date-time (UTC), e.g. 2026-11-01T00:00:00Z." })
    .optional()
    .openapi({
      description: "Only messages created strictly after this instant.",
      example: "2026-11-01T00:00:00Z",
    }),
  createdBefore: z
    .string()
    .datetime({ error: "createdBefore must be an ISO 8601 date-time (UTC), e.g. 2026-11-02T00:00:00Z." })
    .optional()
    .openapi({
      description: "Only messages created strictly before this instant.",
      example: "2026-11-02T00:00:00Z",
    }),
  limit: pageLimit(
    20,
    "Messages per page, 1–100 (default 20). A page may hold fewer: follow `nextCursor` until it is null.",
  ),
  cursor: z.string().max(300).optional().openapi({
    description: "`nextCursor` of the previous page, unchanged (with the same filters).",
    example: "WzEsImEzYjRjNWQ2ZTdmOCIsMTc2MzgzNjU0NzI4NywiNDJhYjIwOTMiXQ",
  }),
});

/** What no version's list query may combine: each conflict named on the field to drop. */
export function listQueryRules(
  q: {
    direction?: Direction | undefined;
    status?: string | undefined;
    to?: string | undefined;
    from?: string | undefined;
    createdAfter?: string | undefined;
    createdBefore?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  const issue = (path: string, message: string) =>
    ctx.addIssue({ code: "custom", path: [path], message, params: { rule: "conflict" } });
  if (q.to !== undefined && q.from !== undefined)
    issue("from", "Give either to (outbound) or from (inbound), not both.");
  if (q.to !== undefined && q.direction === "inbound")
    issue("to", "to filters outbound messages; drop direction=inbound or use from.");
  if (q.from !== undefined && q.direction === "outbound")
    issue("from", "from filters inbound messages; drop direction=outbound or use to.");
  if (q.status === "received" && q.direction === "outbound")
    issue("status", "received is the status of inbound messages.");
  if (q.status !== undefined && q.status !== "received" && (q.direction === "inbound" || q.from !== undefined)) {
    issue("status", `${q.status} is a status of outbound messages; inbound messages are received.`);
  }
  if (q.createdAfter && q.createdBefore && Date.parse(q.createdAfter) >= Date.parse(q.createdBefore)) {
    issue("createdBefore", "createdBefore must be later than createdAfter.");
  }
}

export const MessageListQuery = MessageListQueryFields.superRefine(listQueryRules);
export type MessageListQuery = z.infer<typeof MessageListQuery>;

/** What a message list can be narrowed by (all optional, combined with AND). */
export type MessageFilter = {
  direction?: Direction;
  status?: MessageStatus | "received";
  channelNumberId?: string;
  /** The other party: the recipient of an outbound message, the sender of an inbound one. */
  counterpart?: string;
  /** Inclusive lower bound on the list time (epoch ms). */
  createdFrom?: number;
  /** Exclusive upper bound on the list time (epoch ms). */
  createdUntil?: number;
  /** The record's type (`text`, `template`, or an inbound message's type): read within the scan budget, no index. */
  type?: string;
  /**
   * With `status: "sent"`, how far the operator reported a sent message got (API v2's `sent`,
   * `delivered` and `read`): read within the scan budget from the record's delivery and read times, no index.
   */
  reached?: Reached;
};

/** How far a sent message got by the operator's reports: no report yet, delivered, or read. */
export type Reached = "none" | "delivered" | "read";

const reachedOf = (r: MessageRow): Reached =>
  r.read_at !== null ? "read" : r.delivered_at !== null ? "delivered" : "none";

/**
 * A position in the newest-first order: records strictly older than it come next. Records of slot
 * tables and history chunks are ordered by id (`createdAt` is the id's time).
 */
export type Keyset = {
  createdAt: number;
  id: string;
};

/** The filters a read row must pass (time bounds are applied by the query). */
export const matches = (r: MessageRow, f: MessageFilter): boolean =>
  (f.direction === undefined || r.direction === f.direction) &&
  (f.status === undefined || r.status === f.status) &&
  (f.channelNumberId === undefined || r.channel_number_id === f.channelNumberId) &&
  (f.counterpart === undefined || r.recipient === f.counterpart) &&
  (f.type === undefined || r.type === f.type) &&
  (f.reached === undefined || reachedOf(r) === f.reached);

export function toFilter(q: MessageListQuery): MessageFilter {
  const f: MessageFilter = {};
  if (q.direction) f.direction = q.direction;
  if (q.status) f.status = q.status;
  if (q.channelNumberId) f.channelNumberId = q.channelNumberId.toLowerCase();
  if (q.to !== undefined) {
    f.counterpart = q.to;
    f.direction = "outbound";
  }
  if (q.from !== undefined) {
    f.counterpart = q.from;
    f.direction = "inbound";
  }
  if (q.createdAfter) f.createdFrom = Date.parse(q.createdAfter) + 1;
  if (q.createdBefore) f.createdUntil = Date.parse(q.createdBefore);
  return f;
}

/**
 * A v2 list's filter: v1's, with `sent`, `delivered` and `read` told apart (each a sent record,
 * by how far the operator reported it got), within the same scan budget.
 */
export function toFilterV2(
  q: Omit<MessageListQuery, "status"> & { status?: MessageStatusV2 | "received" | undefined },
): MessageFilter {
  const { status, ...rest } = q;
  const f = toFilter(rest);
  if (status === "delivered" || status === "read") {
    f.status = "sent";
    f.reached = status;
  } else if (status === "sent") {
    f.status = "sent";
    f.reached = "none";
  } else if (status !== undefined) f.status = status;
  return f;
}

// Cursors carry the position and a tag of the workspace, so that a cursor of
// another workspace (or a made-up one) is refused rather than reinterpreted.
const tagOf = async (workspaceId: string): Promise<string> => {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`cursor\n${workspaceId}`)),
  );
  return Array.from(digest.slice(0, 6), (b) => b.toString(16).padStart(2, "0")).join("");
};

export async function encodeMessageCursor(workspaceId: string, k: Keyset): Promise<string> {
  const parts = [1, await tagOf(workspaceId), k.createdAt, k.id];
  return toBase64Url(new TextEncoder().encode(JSON.stringify(parts)));
}

export async function decodeMessageCursor(workspaceId: string, raw: string | undefined): Promise<Keyset | null> {
  if (raw === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(
      new TextDecoder().decode(fromBase64(raw.replaceAll("-", "+").replaceAll("_", "/"))),
    );
    if (
      Array.isArray(parsed) &&
      parsed.length === 4 &&
      parsed[0] === 1 &&
      parsed[1] === (await tagOf(workspaceId)) &&
      Number.isSafeInteger(parsed[2]) &&
      typeof parsed[3] === "string" &&
      parsed[3].length <= 64
    ) {
      return { createdAt: parsed[2] as number, id: parsed[3] };
    }
  } catch {
    // the uniform error below
  }
  throw new ApiError("invalid_request", "The cursor is not one this API returned for this workspace.", {
    details: [
      { path: "query.cursor", rule: "format", message: "Pass the nextCursor value of a previous page unchanged." },
    ],
  });
}
