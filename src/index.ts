import { app } from "./app";
import { consumeMessageCopies } from "./queue/message-copies";
import type { MessageCopy } from "./domain/message";
import { log } from "./lib/log";

export { WorkspaceDurableObject } from "./durable-objects/workspace";
export { ChannelNumberDurableObject } from "./durable-objects/channel-number";

export default {
  fetch: app.fetch,
  async queue(batch, env) {
    switch (batch.queue) {
      case "message-copies":
        return consumeMessageCopies(batch as MessageBatch<MessageCopy>, env);
      default:
        log("warn", "message from an unknown queue acknowledged", { queue: batch.queue });
        batch.ackAll();
    }
  },
} satisfies ExportedHandler<Env, unknown>;
