import type { z } from "@hono/zod-openapi";
import type { ChannelNumberRow } from "../db/channel-numbers";
import { channelNumberStub } from "../durable-objects/stubs";
import { toChannelNumberView, toNumberSending, type ChannelNumberDetail } from "./channel-number-view";
import { numberHealth } from "./number-health";

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
  const [sending, health] = await Promise.all([
    channelNumberStub(env, row.id).sendingState(),
    numberHealth(env, row, opts),
  ]);
  return { ...toChannelNumberView(row), sending: toNumberSending(sending), health };
}
