import { clearSealedTokensDisconnectedBefore } from "../db/channel-numbers";
import { OPERATOR_MEDIA_DAYS } from "../messages/inbound-media";
import type { ScheduledJob } from "./job";

const BATCH = 500;
// Numbers are disconnected by hand (≤ 30 changes an hour per workspace): a few hundred a day at
// design load. An hourly run clearing up to 2,000 keeps up with 48,000 a day.
const MAX_BATCHES = 4;

/**
 * Clears the sealed token of numbers disconnected more than the operator's media window ago: the
 * last media a number received expires at the operator within that window of its disconnection,
 * so no copy or fetch-through needs its token after it. At most 2,000 a run, through the index of
 * disconnected numbers that still hold a token.
 */
export const clearDisconnectedTokens: ScheduledJob = {
  name: "sealed-token-retention",
  async run(env, now) {
    const before = new Date(now - OPERATOR_MEDIA_DAYS * 24 * 3_600_000).toISOString();
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const cleared = await clearSealedTokensDisconnectedBefore(env.DB, before, BATCH);
      total += cleared;
      if (cleared < BATCH) break;
    }
    return total;
  },
};
