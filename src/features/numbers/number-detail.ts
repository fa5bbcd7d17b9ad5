import type { z } from "@hono/zod-openapi";
import type { ChannelNumberRow } from "../../db/channel-numbers";
import { sendsOnDay } from "../usage/store";
import { isoNow } from "../../lib/clock";
import {
  toNumberSending,
  type ChannelNumber,
  type ChannelNumberDetail,
  type NumberSendingState,
} from "../../domain/channel-number-view";
import type { NumberHealthView } from "../../domain/number-health";
import { refreshIfStale } from "./refresh-health";
import { noticeOf } from "../../domain/operator-notice";
import { numberSendingState } from "../../engine/numbers";

/** A connected number as the API lists it. */
export const toChannelNumberView = (row: ChannelNumberRow): z.infer<typeof ChannelNumber> => ({
  id: row.id,
  displayPhoneNumber: row.display_phone_number,
  status: "connected",
  upstream: row.upstream_type,
  createdAt: row.created_at,
});

/**
 * A connected number as `GET /channel-numbers/{id}` shows it (and the connect and
 * token routes answer): its record, its sending state and its health. `refresh`
 * lets the operator be asked again when its last answer is an hour old.
 */
export async function numberDetail(
  env: Env,
  row: ChannelNumberRow,
  opts: { refresh: boolean },
): Promise<z.infer<typeof ChannelNumberDetail>> {
  const [sending, health] = await Promise.all([numberSendingState(env, row.id), numberHealth(env, row, opts)]);
  return { ...toChannelNumberView(row), sending: toNumberSending(sending), health };
}

/** The health of a number, from its row (refreshed first when `refresh`), its object's sending state and today's counts (D1's usage_daily, shipped at most once a minute). */
export async function numberHealth(
  env: Env,
  row: ChannelNumberRow,
  opts: { refresh: boolean },
): Promise<NumberHealthView> {
  return (await numberHealthAndSending(env, row, opts)).health;
}

/** The health, and the sending state it was read from (null for a disconnected number): the number's dashboard page shows both. */
export async function numberHealthAndSending(
  env: Env,
  row: ChannelNumberRow,
  opts: { refresh: boolean },
): Promise<{ health: NumberHealthView; sending: NumberSendingState | null }> {
  const current = opts.refresh && row.status === "connected" ? await refreshIfStale(env, row) : row;
  const today = isoNow().slice(0, 10);
  const [sending, sendsToday] = await Promise.all([
    current.status === "connected" ? numberSendingState(env, current.id) : null,
    sendsOnDay(env.DB, current.workspace_id, current.id, today),
  ]);
  const paused = sending?.paused ?? null;
  const health: NumberHealthView = {
    state: current.status === "disconnected" ? "disconnected" : paused ? "paused" : "active",
    pausedSince: paused?.since ?? null,
    pausedReason: paused
      ? `${paused.message}${paused.upstreamCode ? ` (operator code ${paused.upstreamCode}${paused.reportedBy === "webhook" ? ", reported by webhook" : ""})` : ""}`
      : null,
    lastOperatorError: current.last_operator_error,
    unverifiedSince: current.unverified_since ?? null,
    lastOperatorNotice: noticeOf(current.last_operator_notice ?? null),
    verifiedName: current.verified_name,
    qualityRating: current.quality_rating,
    messagingLimitTier: current.messaging_limit_tier,
    checkedAt: current.operator_checked_at,
    sendsToday,
  };
  return { health, sending };
}
