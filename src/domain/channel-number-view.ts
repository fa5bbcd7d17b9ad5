import { z } from "@hono/zod-openapi";
import type { ChannelNumberRow } from "../db/channel-numbers";

export const ChannelNumber = z
  .object({
    id: z.string().uuid().openapi({ description: "Use as `channelNumberId`." }),
    displayPhoneNumber: z.string(),
    status: z.literal("connected"),
    upstream: z.enum(["sandbox", "cloud"]).openapi({ description: "`sandbox` numbers deliver nowhere; see the sandbox docs." }),
    createdAt: z.string().datetime(),
  })
  .openapi("ChannelNumber");

export const toChannelNumberView = (row: ChannelNumberRow): z.infer<typeof ChannelNumber> => ({
  id: row.id,
  displayPhoneNumber: row.display_phone_number,
  status: "connected",
  upstream: row.upstream_type,
  createdAt: row.created_at,
});
