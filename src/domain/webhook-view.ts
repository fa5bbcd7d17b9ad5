import { z } from "@hono/zod-openapi";
import type { WebhookRow } from "../db/webhooks";

export const Webhook = z
  .object({
    id: z.string().uuid(),
    channelNumberId: z.string().uuid(),
    url: z.string().url(),
    status: z.enum(["enabled", "disabled"]).openapi({
      description: "`disabled` after the endpoint kept failing for days; configure it again to re-enable.",
    }),
    failingSince: z.string().datetime().nullable(),
    disabledAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Webhook");

export const toWebhookView = (row: WebhookRow): z.infer<typeof Webhook> => ({
  id: row.id,
  channelNumberId: row.channel_number_id,
  url: row.url,
  status: row.status,
  failingSince: row.failing_since,
  disabledAt: row.disabled_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});
