import { app } from "./app";
import type { UsageCountMessage } from "./durable-objects/workspace/workspace";
import type { WebhookQueueMessage } from "./domain/events";
import { log } from "./lib/log";
import { consumeUsageCounts } from "./queue/usage-counts";
import { consumeDeadWebhookDeliveries, consumeWebhookDeliveries } from "./queue/webhook-delivery";
import { consumeUpstreamEvents } from "./queue/upstream-events";

export { WorkspaceDurableObject } from "./durable-objects/workspace/workspace";
export { ChannelNumberDurableObject } from "./durable-objects/channel-number/channel-number";
export { SignInThrottleDurableObject } from "./durable-objects/sign-in-throttle";

export default {
  fetch: app.fetch,
  async queue(batch, env, _ctx) {
    switch (batch.queue) {
      case "usage-counts":
        return consumeUsageCounts(batch as MessageBatch<UsageCountMessage>, env);
      case "webhook-deliveries":
        return consumeWebhookDeliveries(batch as MessageBatch<WebhookQueueMessage>, env);
      case "webhook-deliveries-dlq":
        return consumeDeadWebhookDeliveries(batch as MessageBatch<WebhookQueueMessage>, env);
      case "upstream-events":
        return consumeUpstreamEvents(batch, env);
      default:
        log("warn", "message from an unknown queue acknowledged", { queue: batch.queue });
        batch.ackAll();
    }
  },
} satisfies ExportedHandler<Env, unknown>;
