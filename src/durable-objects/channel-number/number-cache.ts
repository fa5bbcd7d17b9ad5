import { getNumberById, type ChannelNumberRow } from "../../db/channel-numbers";
import { now } from "../../lib/clock";

// A disconnect is also pushed to the object at once; the TTL bounds the lag otherwise.
const NUMBER_TTL_MS = 30_000;

/** The number's D1 row, cached so that the drain reads D1 at most twice a minute. */
export interface CachedNumber {
  row: ChannelNumberRow | null;
  loadedAt: number;
}

export async function loadNumber(db: D1Database, id: string, cached: CachedNumber | null): Promise<CachedNumber> {
  if (cached && now() - cached.loadedAt < NUMBER_TTL_MS) return cached;
  return { row: await getNumberById(db, id), loadedAt: now() };
}
