import type { StoredMedia } from "./inbound-media";

// What an inbound message hands the engine: its record, and what its number learns from it.

/** An inbound message from a user to one of the workspace's numbers. */
export interface InboundRecord {
  channelNumberId: string;
  upstreamMessageId: string;
  from: string;
  type: string;
  text: string | null;
  content: Record<string, unknown> | null;
  /** What the operator tells beyond the content (sender identity, links, media): stored as the record's `details`. */
  details?: Record<string, unknown> | null;
  /** The file of an image, audio, video, document or sticker: stored as `details.media`, and copied to R2. */
  media?: StoredMedia | null;
  at: number;
}

/** The sender of an inbound message, for its window: its key (phone number, or user id without one) and, beside a phone number, its user id. */
export interface InboundContact {
  from: string;
  at: number;
  userId?: string;
}

/** A user's phone number or user id changed from `from` to `to` (an operator `system` message at `at`). */
export interface IdentityMove {
  from: string;
  to: string;
  at: number;
}
