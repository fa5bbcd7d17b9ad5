import type { WindowState } from "../../domain/rate-window";
import type { NormalizedError } from "../../messages/status";

export interface AdmitCommand {
  jobId: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  acceptedAt: number;
  /**
   * The workspace's acceptance times for this number in the last second: the number's window is
   * kept in memory, and after a restart it starts from these.
   */
  recent?: number[];
  /**
   * The workspace instance handing it (random per instance). What an earlier instance handed and
   * never committed (it died in between) is not in `recent`: its slots in the window go.
   */
  instance?: string;
}

export type AdmitResult =
  { ok: true; window: WindowState } | { ok: false; reason: "rate_limited"; window: WindowState };

export interface ContactWindow {
  phone: string;
  lastInboundAt: string | null;
  windowExpiresAt: string | null;
  windowOpen: boolean;
}

/** A read mark's call: taken by the operator at `at`, refused by it, or not made (the number is disconnected). */
export type ReadMarkOutcome =
  { kind: "marked"; at: number } | { kind: "refused"; error: NormalizedError } | { kind: "disconnected" };
