import { findConnectedByUpstreamId } from "../db/channel-numbers";
import { channelNumberStub } from "../durable-objects/stubs";
import type { InboundMessage, OperatorStatus } from "../durable-objects/channel-number";
import { CloudWebhookPayload, operatorTime } from "../upstream/cloud-webhook-payload";
import { now } from "../lib/clock";
import { log } from "../lib/log";
import { UUID_PATTERN } from "../domain/job-id";

const OPERATOR_STATUSES = new Set(["sent", "delivered", "read", "failed"]);

/** Applies one verified operator payload: statuses move our messages, inbound messages become events. */
export async function applyOperatorPayload(env: Env, raw: unknown): Promise<void> {
  const parsed = CloudWebhookPayload.safeParse(raw);
  if (!parsed.success) {
    log("warn", "operator payload not understood; dropped", { issues: parsed.error.issues.length });
    return;
  }
  for (const entry of parsed.data.entry) {
    for (const change of entry.changes) {
      const phoneNumberId = change.value.metadata?.phone_number_id;
      if (!phoneNumberId) continue;
      const number = await findConnectedByUpstreamId(env.DB, phoneNumberId);
      if (!number) {
        log("warn", "operator webhook for a number we do not have; acknowledged", { phoneNumberId });
        continue;
      }
      const stub = channelNumberStub(env, number.id);
      const statuses: OperatorStatus[] = (change.value.statuses ?? [])
        .filter((s) => OPERATOR_STATUSES.has(s.status))
        .map((s) => ({
          upstreamMessageId: s.id,
          jobId: s.biz_opaque_callback_data && UUID_PATTERN.test(s.biz_opaque_callback_data) ? s.biz_opaque_callback_data : null,
          status: s.status as OperatorStatus["status"],
          at: operatorTime(s.timestamp, now()),
          errorCode: s.errors?.[0]?.code !== undefined ? String(s.errors[0].code) : null,
          errorMessage: s.errors?.[0]?.message ?? s.errors?.[0]?.title ?? null,
        }));
      if (statuses.length > 0) await stub.applyOperatorStatuses(statuses);

      const inbound: InboundMessage[] = (change.value.messages ?? []).map((m) => {
        const { id, from, timestamp, type, text, ...rest } = m;
        return {
          upstreamMessageId: id,
          from,
          type,
          text: type === "text" && text ? text.body : null,
          content: type === "text" ? null : ((rest[type] as Record<string, unknown> | undefined) ?? rest),
          at: operatorTime(timestamp, now()),
        };
      });
      if (inbound.length > 0) await stub.receiveInbound(number.workspace_id, number.id, inbound);
    }
  }
}

export async function consumeUpstreamEvents(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    try {
      await applyOperatorPayload(env, message.body);
      message.ack();
    } catch (err) {
      log("warn", "operator payload failed; will retry", { error: String(err), attempts: message.attempts });
      message.retry({ delaySeconds: Math.min(300, 2 ** message.attempts) });
    }
  }
}
