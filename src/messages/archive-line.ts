import type { InboundMessage, Message, OutboundMessage } from "./message";
import {
  toMessageViewV2,
  withStatusV2,
  type InboundMessageV2,
  type MessageV2,
  type OutboundMessageV2,
} from "./message-v2";
import { toMessageView, type MessageRow } from "./record";

// One line of an archived day (gzip NDJSON in R2, durable-objects/history/archive-writer.ts): the
// message as v1 shows it, and, only where v2 shows more than it derives from that view
// (`withStatusV2`), v2's own values under one extra key. v1's archive stays what it always was
// (the key is dropped, and a line without it is v1's view as written), and v2's archive shows what
// `GET /api/v2/messages/{id}` showed: a rich message's type and fields, an inbound message's read
// mark. Neither is stored twice: the key holds only what differs.

/** The key under which an archived line keeps v2's own values. Written last, so v1's keys stay in v1's order. */
export const V2_KEY = "v2";

/**
 * A line as written: v1's view, with v2's own values (those of the keys whose values differ from what
 * `withStatusV2` derives from v1's view) when there are any.
 */
export type ArchivedLine =
  | (OutboundMessage & { [V2_KEY]?: Partial<OutboundMessageV2> })
  | (InboundMessage & { [V2_KEY]?: Partial<InboundMessageV2> });

// Most values are strings or null: compared as they are, objects by their JSON (the bytes a view shows).
const same = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));

/**
 * The keys of `view` whose values `derived` does not have, with the view's values. Spread over
 * `derived` they give `view` in keys, values and order, as long as every key `view` adds to
 * `derived` comes after those they share (a v2 view is built by spreading v1's first).
 */
function differing<T extends object>(view: T, derived: object): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(view) as (keyof T & string)[]) {
    const value = view[key];
    if (value === undefined) continue;
    if (!(key in derived) || !same((derived as Record<string, unknown>)[key], value)) out[key] = value;
  }
  return out;
}

/** A record's line in its day's archive. */
export function toArchivedLine(row: MessageRow): ArchivedLine {
  const v1 = toMessageView(row);
  const v2 = toMessageViewV2(row, v1);
  const derived = withStatusV2(v1);
  if (v1.direction === "outbound" && v2.direction === "outbound") {
    const extra = differing(v2, derived);
    return Object.keys(extra).length === 0 ? v1 : { ...v1, [V2_KEY]: extra };
  }
  if (v1.direction === "inbound" && v2.direction === "inbound") {
    const extra = differing(v2, derived);
    return Object.keys(extra).length === 0 ? v1 : { ...v1, [V2_KEY]: extra };
  }
  return v1;
}

/** An archived line as v1 shows it: the line without v2's key (key order as written). */
export function v1OfLine(line: ArchivedLine): Message {
  const { [V2_KEY]: _extra, ...v1 } = line;
  return v1;
}

/**
 * An archived line as v2 shows it: v2's statuses and answer derived from v1's view, with the line's
 * own v2 values over them. A line written before v2's values were kept reads as `withStatusV2` alone.
 */
export function v2OfLine(line: ArchivedLine): MessageV2 {
  const derived = withStatusV2(v1OfLine(line));
  if (line.direction === "outbound" && derived.direction === "outbound") return { ...derived, ...line[V2_KEY] };
  if (line.direction === "inbound" && derived.direction === "inbound") return { ...derived, ...line[V2_KEY] };
  return derived;
}

/**
 * Whether a line's text may carry v2's key: false means it surely does not (the key and its colon
 * are not in the text), and v1 serves the text as it is, without parsing it.
 */
export const mayCarryV2 = (text: string): boolean => text.includes(`"${V2_KEY}":`);
