import { InboundAnswer, answerOf } from "./inbound-answer";
import { READ_MARK_FIELDS, readMarkOf } from "./read-mark";

/**
 * What API v2 shows of an inbound message beyond v1's view (message.ts, fixed by v1's contract): the
 * user's answer to your buttons, list or Flow as typed fields, and your read mark. The answer is read
 * from the record's content, the mark from its `read_at` and `details`: nothing is stored for the view.
 */
export const INBOUND_V2_FIELDS = {
  // A named schema's nullable wrapper takes no metadata of its own: it would replace the component.
  answer: InboundAnswer.nullable(),
  ...READ_MARK_FIELDS,
};

/** The answer a `message.received` event carries in v2: read from the event's own type and content. */
export const answerOfEvent = (data: { type: string; content: Record<string, unknown> | null }): InboundAnswer | null =>
  answerOf(data.type, data.content);

/** The v2 fields of an inbound record's view. */
export function inboundV2FieldsOf(
  view: { type: string; content: Record<string, unknown> | null },
  row: { read_at: number | null; details: string | null },
): { answer: InboundAnswer | null; readAt: string | null; typingIndicator: boolean } {
  return { answer: answerOf(view.type, view.content), ...readMarkOf(row) };
}
