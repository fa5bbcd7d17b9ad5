import {
  disconnectAccountNumbers,
  findConnectedByOperatorId,
  findReportingNumberByOperatorId,
  recordOperatorAccountError,
  type ChannelNumberRow,
} from "../db/channel-numbers";
import { applyStatuses, receiveMessages, type ReceivedMessage } from "../engine/operator-events";
import { type OperatorStatus, type StatusUpdate, type NormalizedError } from "../messages/status";
import { type InboundContact, type InboundRecord } from "../messages/inbound";
import { numberChanged, pauseNumbers, workspaceChanged } from "../engine/numbers";
import { operatorStatusUpdate } from "../operator/status-report";
import {
  OperatorAccountUpdate,
  OperatorInbound,
  OperatorStatusReport,
  operatorTime,
  type OperatorItem,
} from "../operator/webhook-payload";
import { inboundMediaOf } from "../operator/media-api";
import { isoNow, now } from "../lib/clock";
import { log } from "../lib/log";
import { storedUuid } from "../lib/job-id";
import { accountEffect, accountOf, applyQualityUpdate } from "../features/numbers/operator-updates";
import { recordAudit } from "../features/audit/record-audit";
import { applyTemplateUpdate } from "../features/templates/sync";
import { contentOf, detailsOf, movesOf, senderOf } from "../operator/inbound-message";
import { applyFieldNotice, applyNumberErrors } from "../features/numbers/operator-notices";
import { isAccountLevel, permanentError } from "../operator/error-codes";
import { routeWithoutJobId } from "./unmatched-statuses";
import type { z } from "zod";

const OPERATOR_STATUSES = new Set(["sent", "delivered", "read", "failed"]);

function toOperatorStatus(s: OperatorStatusReport): OperatorStatus | null {
  if (!OPERATOR_STATUSES.has(s.status)) return null;
  const error = s.errors?.[0];
  const details = error?.error_data?.details;
  const message = error?.message ?? error?.title ?? null;
  return {
    upstreamMessageId: s.id,
    jobId: s.biz_opaque_callback_data ? storedUuid(s.biz_opaque_callback_data) : null,
    status: s.status as OperatorStatus["status"],
    at: operatorTime(s.timestamp, now()),
    errorCode: error?.code !== undefined ? String(error.code) : null,
    errorMessage: message,
    errorDetails: details ?? null,
    recipientId: s.recipient_id || null,
  };
}

/** Null when nothing names the sender. */
function toInbound(m: OperatorInbound, rawContact: unknown, channelNumberId: string): ReceivedMessage | null {
  const { id, from: _from, from_user_id: _fromUserId, timestamp, type, text, ...rest } = m;
  const sender = senderOf(m, rawContact);
  if (!sender) return null;
  const at = operatorTime(timestamp, now());
  const details = detailsOf(m, sender);
  const record: InboundRecord = {
    channelNumberId,
    upstreamMessageId: id,
    from: sender.key,
    type,
    text: type === "text" && text ? text.body : null,
    content: contentOf(type, rest),
    details,
    at,
    media: inboundMediaOf(type, rest[type]),
  };
  // A `system` message is the operator telling of an identity change, not the user writing: no window opens.
  if (type === "system") return { record, contact: null, moves: movesOf(details, at) };
  const contact: InboundContact = { from: sender.key, at };
  if (sender.userId !== null && sender.userId !== sender.key) contact.userId = sender.userId;
  return { record, contact, moves: [] };
}

/** An inbound record that keeps only that a message of this type came from this sender, and when. */
const withoutContent = (r: InboundRecord): InboundRecord => ({
  ...r,
  text: null,
  content: null,
  details: null,
  media: null,
});

/**
 * What names an operator item that could not be applied, for its log line: the operator's id and
 * type when they are short strings. Never a body, a phone number or any other value.
 */
function namesOf(raw: unknown): { operatorId: string | null; type: string | null } {
  const o = raw && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  const short = (v: unknown) => (typeof v === "string" && v.length <= 128 ? v : null);
  return { operatorId: short(o.id), type: short(o.type)?.slice(0, 32) ?? null };
}

/** Which fields failed and how (`timestamp:invalid_type`), without their values. */
const issuesOf = (error: z.ZodError): string =>
  error.issues
    .slice(0, 10)
    .map((i) => `${i.path.map(String).join(".").slice(0, 64) || "(item)"}:${i.code}`)
    .join(",");

interface Work {
  number: ChannelNumberRow;
  statuses: { index: number; status: OperatorStatus }[];
  inbound: { index: number; inbound: ReceivedMessage }[];
}

/** What became of one operator item: applied (or never applicable, and logged), or to be tried again. */
export type ItemOutcome = "done" | "retry";

class NotAnOperatorItem extends Error {}

/**
 * Applies operator items (statuses and inbound messages, see
 * webhook-payload.ts; quality and account updates, the numbers' `errors`
 * and the fields not applied here go to the numbers' D1 rows, each on its own). Each item is validated on its own: a malformed
 * one is logged and done without touching its siblings. Work is grouped per
 * number: one call to the number object for its statuses, one to the
 * workspace object for its inbound messages. Applying an item twice changes
 * nothing, so "retry" is always safe. Never throws.
 */
export async function applyOperatorItems(items: readonly unknown[], env: Env): Promise<ItemOutcome[]> {
  const outcomes: ItemOutcome[] = items.map(() => "done");
  const numbers = new Map<string, Promise<ChannelNumberRow | null>>();
  const reporting = new Map<string, Promise<ChannelNumberRow | null>>();
  const numberOf = (phoneNumberId: string) => {
    let n = numbers.get(phoneNumberId);
    if (!n) numbers.set(phoneNumberId, (n = findConnectedByOperatorId(env.DB, phoneNumberId)));
    return n;
  };
  // Statuses also reach a disconnected number: its outbox still knows the jobIds it sent, and the
  // message records still need their delivered/read/failed reports. Inbound messages do not.
  const reportingNumberOf = (phoneNumberId: string) => {
    let n = reporting.get(phoneNumberId);
    if (!n) {
      n = numberOf(phoneNumberId).then(
        (connected) => connected ?? findReportingNumberByOperatorId(env.DB, phoneNumberId),
      );
      reporting.set(phoneNumberId, n);
    }
    return n;
  };
  const work = new Map<string, Work>();
  const accountWork: Promise<void>[] = [];
  for (const [index, body] of items.entries()) {
    const item = body as OperatorItem;
    if (
      item &&
      typeof item === "object" &&
      (item.kind === "quality" ||
        item.kind === "account" ||
        item.kind === "template" ||
        item.kind === "errors" ||
        item.kind === "field")
    ) {
      const wabaId = typeof item.wabaId === "string" ? item.wabaId : null;
      accountWork.push(
        accountItem(env, wabaId, item).catch((err) => {
          log("warn", "operator account item failed; will retry", { kind: item.kind, error: String(err) });
          outcomes[index] = "retry";
        }),
      );
      continue;
    }
    try {
      if (!item || typeof item !== "object" || typeof item.phoneNumberId !== "string") throw new NotAnOperatorItem();
      const number = await (item.kind === "status"
        ? reportingNumberOf(item.phoneNumberId)
        : numberOf(item.phoneNumberId));
      if (!number) {
        log("warn", "operator webhook for a number we do not have; acknowledged", {
          phoneNumberId: item.phoneNumberId,
        });
        continue;
      }
      const w = work.get(number.id) ?? { number, statuses: [], inbound: [] };
      work.set(number.id, w);
      if (item.kind === "status") {
        const parsed = OperatorStatusReport.safeParse(item.status);
        const status = parsed.success ? toOperatorStatus(parsed.data) : null;
        if (!parsed.success)
          log("warn", "operator status not understood; dropped", {
            phoneNumberId: item.phoneNumberId,
            ...namesOf(item.status),
            issues: issuesOf(parsed.error),
          });
        else if (!status)
          log("info", "operator status of a kind not applied here; ignored", {
            ...namesOf(item.status),
            status: parsed.data.status.slice(0, 32),
          });
        if (status) w.statuses.push({ index, status });
      } else if (item.kind === "message") {
        const parsed = OperatorInbound.safeParse(item.message);
        const inbound = parsed.success ? toInbound(parsed.data, item.contact, number.id) : null;
        if (inbound && number.unverified_since !== null) {
          // The operator refused the token this workspace connected the number with: it may no
          // longer be the business's. The message is recorded without its content (number-binding.ts).
          w.inbound.push({ index, inbound: { ...inbound, record: withoutContent(inbound.record) } });
        } else if (inbound) w.inbound.push({ index, inbound });
        else if (parsed.success)
          log("warn", "operator message without a sender; dropped", {
            phoneNumberId: item.phoneNumberId,
            ...namesOf(item.message),
          });
        else
          log("warn", "operator message not understood; dropped", {
            phoneNumberId: item.phoneNumberId,
            ...namesOf(item.message),
            issues: issuesOf(parsed.error),
          });
      } else {
        throw new NotAnOperatorItem();
      }
    } catch (err) {
      if (err instanceof NotAnOperatorItem) {
        log("warn", "queue item is not an operator item; dropped");
      } else {
        log("warn", "operator item could not be routed; will retry", { error: String(err) });
        outcomes[index] = "retry";
      }
    }
  }
  const settle = async (indexes: number[], apply: () => Promise<unknown>) => {
    if (indexes.length === 0) return;
    try {
      await apply();
    } catch (err) {
      log("warn", "operator items failed; will retry", { error: String(err), items: indexes.length });
      for (const i of indexes) outcomes[i] = "retry";
    }
  };
  await Promise.all([
    ...accountWork,
    ...[...work.values()].map(async ({ number, statuses, inbound }) => {
      await settle(
        statuses.map((s) => s.index),
        async () => {
          const reports = statuses.map((s) => s.status);
          // An account-level code fails every later message alike: the number pauses, as for the same answer to a call.
          const accountError = reports.findLast((r) => r.status === "failed" && isAccountLevel(r.errorCode));
          if (accountError && number.status === "connected")
            await pauseNumbers(
              env,
              [number.id],
              permanentError(
                accountError.errorCode,
                accountError.errorMessage ?? undefined,
                accountError.errorDetails ?? undefined,
              ),
            );
          // Routed by our jobId to the workspace's record; a report without one by the operator's id of the message.
          const routed = await routeWithoutJobId(env, number, reports);
          const updates = [...reports.filter((r) => r.jobId), ...routed]
            .map(operatorStatusUpdate)
            .filter((u): u is StatusUpdate => u !== null);
          if (updates.length < statuses.length)
            log("info", "operator statuses naming no message of ours; ignored", {
              ignored: statuses.length - updates.length,
            });
          if (updates.length > 0) await applyStatuses(env, number.workspace_id, updates);
        },
      );
      await settle(
        inbound.map((i) => i.index),
        async () => {
          await receiveMessages(
            env,
            { id: number.id, workspaceId: number.workspace_id },
            inbound.map((i) => i.inbound),
          );
        },
      );
    }),
  ]);
  return outcomes;
}

/** An item about numbers rather than one message: applied to the numbers' rows (and objects). */
function accountItem(
  env: Env,
  wabaId: string | null,
  item: Extract<OperatorItem, { kind: "quality" | "account" | "template" | "errors" | "field" }>,
): Promise<void> {
  switch (item.kind) {
    case "quality":
      return applyQualityUpdate(env, wabaId, item.update);
    case "account":
      return applyAccountUpdate(env, wabaId, item.update);
    case "template":
      return applyTemplateUpdate(env, wabaId, item.update);
    case "errors":
      return applyNumberErrors(env, {
        wabaId,
        phoneNumberId: typeof item.phoneNumberId === "string" ? item.phoneNumberId : null,
        errors: Array.isArray(item.errors) ? item.errors : [],
      }).then((toPause) => (toPause ? pauseNumbers(env, toPause.numberIds, toPause.error) : undefined));
    case "field":
      return applyFieldNotice(env, {
        wabaId,
        phoneNumberId: typeof item.phoneNumberId === "string" ? item.phoneNumberId : null,
        field: typeof item.field === "string" ? item.field.slice(0, 64) : "unknown",
      });
  }
}

/**
 * Consumer of `upstream-events`: operator items the webhook route could not
 * apply at once (one item per queue message). Applied like there; an item
 * that fails again comes back with a growing delay, then to the dead-letter queue.
 */
export async function consumeOperatorEvents(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const outcomes = await applyOperatorItems(
    batch.messages.map((m) => m.body),
    env,
  );
  batch.messages.forEach((m, i) =>
    outcomes[i] === "done" ? m.ack() : m.retry({ delaySeconds: backoffSeconds(m.attempts) }),
  );
}

const backoffSeconds = (attempts: number): number => Math.min(300, 2 ** attempts);

/**
 * Consumer of `upstream-events-dlq`: operator items that kept failing. They
 * are logged as an error with their identifiers only (no message text or phone
 * number), for the operator to replay from the provider's side if needed.
 */
export function consumeDeadOperatorEvents(batch: MessageBatch<unknown>): void {
  for (const message of batch.messages) {
    const item = message.body as Partial<OperatorItem> | null;
    const inner = item?.kind === "status" ? item.status : item?.kind === "message" ? item.message : undefined;
    const wabaId = item && "wabaId" in item && typeof item.wabaId === "string" ? item.wabaId : null;
    const id = inner && typeof inner === "object" && "id" in inner && typeof inner.id === "string" ? inner.id : null;
    log("error", "operator item dead-lettered after its retries", {
      kind: typeof item?.kind === "string" ? item.kind : "unknown",
      phoneNumberId:
        item && "phoneNumberId" in item && typeof item.phoneNumberId === "string" ? item.phoneNumberId : null,
      operatorId: id,
      wabaId,
      attempts: message.attempts,
    });
  }
  batch.ackAll();
}

/**
 * An account event: logged (ids and the event only) and applied to the account's connected live
 * numbers (accountEffect): their last operator error, and a pause (through each number's object, as
 * the same refusal by webhook), an unverified binding, or a disconnection, where it says so.
 */
async function applyAccountUpdate(env: Env, entryWabaId: string | null, raw: unknown): Promise<void> {
  const parsed = OperatorAccountUpdate.safeParse(raw);
  if (!parsed.success) {
    log("warn", "operator account update not understood; dropped", {
      wabaId: entryWabaId,
      issues: parsed.error.issues.length,
    });
    return;
  }
  const wabaId = accountOf(parsed.data, entryWabaId);
  const effect = accountEffect(parsed.data);
  let ids: string[] = [];
  if (effect && wabaId) {
    if (effect.unbind) {
      const gone = await disconnectAccountNumbers(env.DB, wabaId, isoNow());
      await Promise.all(gone.map((row) => afterOperatorDisconnect(env, row, parsed.data.event)));
      ids = gone.map((r) => r.id);
    } else {
      ids = await recordOperatorAccountError(env.DB, wabaId, effect.error, effect.unverify ? isoNow() : null);
      const pause = effect.pause;
      // As an account-level code by webhook: the number object pauses (number-hold.ts) and probes.
      if (pause) {
        const error: NormalizedError = { ...pause, retriable: true, upstreamCode: null };
        await pauseNumbers(env, ids, error);
      }
    }
  }
  log(effect ? "warn" : "info", "operator account update", {
    wabaId,
    event: parsed.data.event,
    refusal: effect !== null,
    paused: effect?.pause ? ids.length : 0,
    unbound: effect?.unbind ? ids.length : 0,
    channelNumberIds: ids.join(","),
  });
}

/** A number the operator's account event disconnected: its sends refused, its queue failed, its workspace's audit log told. */
async function afterOperatorDisconnect(env: Env, row: ChannelNumberRow, event: string): Promise<void> {
  await Promise.all([workspaceChanged(env, row.workspace_id), numberChanged(env, row.id)]);
  await recordAudit(
    env.DB,
    {
      workspaceId: row.workspace_id,
      actor: { type: "admin", id: "operator-webhook" },
      actorLabel: `the operator's account_update webhook (${event})`,
      clientAddress: null,
      requestId: "operator-webhook",
    },
    {
      action: "channel_number.disconnected",
      target: { type: "channel_number", id: row.id },
      detail: `${row.display_phone_number}: the operator deleted its business account`,
    },
  );
}
