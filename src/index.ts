import { app } from "./app";
import type { UsageCountMessage } from "./engine/usage";
import type { WebhookQueueMessage } from "./messages/events";
import { log } from "./lib/log";
import { consumeUsageCounts } from "./queue/usage-counts";
import { consumeDeadWebhookDeliveries, consumeWebhookDeliveries } from "./queue/webhook-delivery";
import { consumeDeadOperatorEvents, consumeOperatorEvents } from "./queue/operator-webhook-events";
import { consumeDeadMediaCopies, consumeMediaCopies } from "./queue/media-copies";
import { runScheduledJobs } from "./scheduled/jobs";
import { now } from "./lib/clock";

export { WorkspaceDurableObject } from "./durable-objects/workspace/workspace";
export { ChannelNumberDurableObject } from "./durable-objects/channel-number/channel-number";
export { MessageHistoryDurableObject } from "./durable-objects/history/history";
export { ThrottleDurableObject } from "./durable-objects/throttle";

export default {
  fetch: app.fetch,
  // The cron trigger of wrangler.toml: retention jobs, each bounded and isolated from the others.
  async scheduled(_controller, env, _ctx) {
    await runScheduledJobs(env, now());
  },
  async queue(batch, env, _ctx) {
    switch (batch.queue) {
      case "usage-counts":
        return consumeUsageCounts(batch as MessageBatch<UsageCountMessage>, env);
      case "webhook-deliveries":
        return consumeWebhookDeliveries(batch as MessageBatch<WebhookQueueMessage>, env);
      case "webhook-deliveries-dlq":
        return consumeDeadWebhookDeliveries(batch as MessageBatch<WebhookQueueMessage>, env);
      // Queue names are deployed infrastructure (wrangler.toml): they keep the old word "upstream".
      case "upstream-events":
        return consumeOperatorEvents(batch, env);
      case "upstream-events-dlq":
        return consumeDeadOperatorEvents(batch);
      case "media-copies":
        return consumeMediaCopies(batch, env);
      case "media-copies-dlq":
        return consumeDeadMediaCopies(batch);
      default:
        log("warn", "message from an unknown queue acknowledged", { queue: batch.queue });
        batch.ackAll();
    }
  },
} satisfies ExportedHandler<Env, unknown>;
