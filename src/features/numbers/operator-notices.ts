import type { OperatorNotice } from "../../domain/operator-notice";
import { recordOperatorNotice } from "../../db/channel-numbers";
import { isoNow, now } from "../../lib/clock";
import { log } from "../../lib/log";
import { StatusError } from "../../operator/webhook-payload";
import { isAccountLevel, permanentError } from "../../operator/error-codes";
import type { NormalizedError } from "../../messages/status";

// What the operator's webhooks say about a number that no message record takes: the changes of a
// field this service does not apply, and the `errors` of a `messages` change. Each is logged (ids,
// field and codes only) and kept as the number's last operator notice, shown on its health; an
// `errors` entry with an account-level code also pauses the number (the caller pauses it), as the
// same code would in a status. Both throw only when D1 fails (the item is retried).

const NOTICE_MESSAGE_CHARS = 300;

const FIELD_WORDS: Record<string, string> = {
  standby:
    'The operator sent this number\'s webhook as "standby": another app controls its conversations, so what it carried (messages, statuses) was not applied here.',
};

const fieldWords = (field: string): string =>
  FIELD_WORDS[field] ??
  `The operator sent a "${field}" webhook for this number; this service does not apply that field.`;

interface Target {
  wabaId: string | null;
  phoneNumberId: string | null;
}

/** A number's notice about the same field is rewritten at most this often (a `standby` number gets one per message). */
const SAME_FIELD_EVERY_MS = 60 * 60_000;

async function record(
  env: Env,
  target: Target,
  notice: OperatorNotice,
  unlessSameFieldSince: string | null = null,
): Promise<string[]> {
  const stored = { ...notice, message: notice.message.slice(0, NOTICE_MESSAGE_CHARS) };
  return recordOperatorNotice(
    env.DB,
    target,
    { field: notice.field, json: JSON.stringify(stored) },
    unlessSameFieldSince,
  );
}

/** A change of a field not applied here (e.g. `standby`): logged, and the number's last notice (at most hourly per field). */
export async function applyFieldNotice(env: Env, item: Target & { field: string }): Promise<void> {
  const ids = await record(
    env,
    item,
    { field: item.field, message: fieldWords(item.field), upstreamCode: null, at: isoNow() },
    new Date(now() - SAME_FIELD_EVERY_MS).toISOString(),
  );
  log("warn", "operator webhook field not applied", {
    field: item.field,
    wabaId: item.wabaId,
    phoneNumberId: item.phoneNumberId,
    channelNumberIds: ids.join(","),
  });
}

/** The numbers to pause, and why: the operator's account-level error, as the same code in a status would pause them. */
export interface NumbersToPause {
  numberIds: string[];
  error: NormalizedError;
}

/**
 * The `errors` of a `messages` change: each logged and the last one the number's notice; returns the
 * numbers to pause when one has an account-level code (null otherwise).
 */
export async function applyNumberErrors(
  env: Env,
  item: Target & { errors: readonly unknown[] },
): Promise<NumbersToPause | null> {
  const errors = item.errors.flatMap((raw) => {
    const parsed = StatusError.safeParse(raw);
    if (!parsed.success) return [];
    const e = parsed.data;
    const code = e.code === undefined ? null : String(e.code).slice(0, 32);
    const words = e.title ?? e.message ?? "The operator reported an error.";
    const details = e.error_data?.details;
    return [{ code, words, details, message: details ? `${words} (${details})` : words }];
  });
  if (errors.length === 0) {
    log("warn", "operator errors not understood; dropped", { wabaId: item.wabaId, phoneNumberId: item.phoneNumberId });
    return null;
  }
  const last = errors[errors.length - 1]!;
  const ids = await record(env, item, {
    field: "messages",
    message: last.message,
    upstreamCode: last.code,
    at: isoNow(),
  });
  const account = errors.findLast((e) => isAccountLevel(e.code));
  const pause: NormalizedError | null = account ? permanentError(account.code, account.words, account.details) : null;
  log("warn", ids.length ? "operator reported errors for a number" : "operator errors for a number we do not have", {
    wabaId: item.wabaId,
    phoneNumberId: item.phoneNumberId,
    codes: errors.map((e) => e.code ?? "none").join(","),
    paused: pause !== null && ids.length > 0,
    channelNumberIds: ids.join(","),
  });
  return pause && ids.length > 0 ? { numberIds: ids, error: pause } : null;
}
