import { applyOperatorQualityUpdate } from "../../db/channel-numbers";
import { isoNow } from "../../lib/clock";
import { log } from "../../lib/log";
import { OperatorAccountUpdate, OperatorQualityUpdate } from "../../operator/webhook-payload";

// The operator's business-account webhooks about a number's health: they complement the
// hourly refresh of number-health.ts. Both functions validate on their own, log ids only (never a
// phone number), return normally for what they cannot use, and throw only when D1 fails (retried).

/** The display number's digits, or null when it has too few or too many to be one. */
const digitsOf = (s: string): string | null => {
  const d = s.replace(/\D/g, "");
  return d.length >= 4 && d.length <= 32 ? d : null;
};

/** A quality or tier change: applied to the matching connected live number's row. */
export async function applyQualityUpdate(env: Env, wabaId: string | null, raw: unknown): Promise<void> {
  const parsed = OperatorQualityUpdate.safeParse(raw);
  const digits = parsed.success ? digitsOf(parsed.data.display_phone_number) : null;
  if (!parsed.success || !digits) {
    log("warn", "operator quality update not understood; dropped", {
      wabaId,
      issues: parsed.success ? 1 : parsed.error.issues.length,
    });
    return;
  }
  const { event, current_limit } = parsed.data;
  // FLAGGED: the rating reached Low (the operator's RED). UNFLAGGED: it left Low, to a rating the
  // webhook does not name, so the next read asks the operator (checkedAt null) instead of guessing.
  const quality_rating = event === "FLAGGED" ? "RED" : null;
  const recheck = event === "UNFLAGGED";
  const tier = current_limit && /^TIER_[A-Z0-9_]+$/.test(current_limit) ? current_limit : null;
  const ids = await applyOperatorQualityUpdate(
    env.DB,
    { displayDigits: digits, wabaId },
    { quality_rating, messaging_limit_tier: tier, checkedAt: recheck ? null : isoNow() },
  );
  log(
    ids.length ? "info" : "warn",
    ids.length
      ? "operator quality update applied"
      : "operator quality update for a number we do not have; acknowledged",
    {
      wabaId,
      event: event ?? null,
      tier,
      channelNumberIds: ids.join(","),
    },
  );
}

/** A restriction's end as the operator gives it: a Unix time (its reference's example) or a date string. */
const untilText = (expiration: number | string | undefined): string => {
  if (expiration === undefined || expiration === "") return "";
  if (typeof expiration === "number") {
    const ms = expiration * 1000;
    return Number.isFinite(ms) && ms <= 8.64e15 ? ` until ${new Date(ms).toISOString()}` : "";
  }
  return ` until ${expiration}`;
};

/**
 * What an account event does to the account's live numbers: words for their `lastOperatorError`,
 * and where the operator stopped serving them, a pause of their sends (`pause`), their binding
 * made unverified (`unverify`: the business took this app's access away) or the numbers
 * disconnected (`unbind`: the account is gone). Null for events that change nothing here.
 */
export interface AccountEffect {
  error: string;
  /** Our error code and words for the pause (the operator sent no code of its own). */
  pause: { code: string; message: string } | null;
  unverify: boolean;
  unbind: boolean;
}

const pauseOf = (code: string, message: string) => ({ code, message });

export function accountEffect(u: OperatorAccountUpdate): AccountEffect | null {
  const effect = (error: string, more: Partial<Omit<AccountEffect, "error">> = {}): AccountEffect => ({
    error: error.slice(0, 300),
    pause: null,
    unverify: false,
    unbind: false,
    ...more,
  });
  const ban = u.ban_info?.waba_ban_state;
  if (u.ban_info && ban !== "REINSTATE") {
    const words = `The operator banned the business account (${u.event}${ban ? `, ${ban}` : ""}${u.ban_info.waba_ban_date ? ` on ${u.ban_info.waba_ban_date}` : ""}).`;
    // SCHEDULE_FOR_DISABLE is a warning; DISABLE means the operator no longer serves the account.
    return effect(words, ban === "DISABLE" ? { pause: pauseOf("account_restricted", words) } : {});
  }
  const restrictions = u.restriction_info ?? [];
  if (restrictions.length > 0 || u.event === "ACCOUNT_RESTRICTION") {
    const what = restrictions.map((r) => `${r.restriction_type ?? "restricted"}${untilText(r.expiration)}`).join(", ");
    return effect(`The operator restricted the business account (${u.event}${what ? `: ${what}` : ""}).`);
  }
  switch (u.event) {
    case "ACCOUNT_VIOLATION": {
      const type = u.violation_info?.violation_type;
      return effect(
        `The operator reported a policy violation by the business account (ACCOUNT_VIOLATION${type ? `: ${type}` : ""}).`,
      );
    }
    case "ACCOUNT_DELETED":
      return effect("The operator deleted the business account (ACCOUNT_DELETED).", { unbind: true });
    case "PARTNER_REMOVED": {
      const words =
        "The business removed this service's access to its account at the operator (PARTNER_REMOVED): an owner must share it again and replace the token.";
      return effect(words, { pause: pauseOf("upstream_permission_denied", words), unverify: true });
    }
    case "ACCOUNT_OFFBOARDED": {
      const words =
        "The operator offboarded the business account from the Cloud API (ACCOUNT_OFFBOARDED: a device change or the number registered again elsewhere).";
      return effect(words, { pause: pauseOf("number_not_registered", words) });
    }
    default:
      return null;
  }
}

/** The account an event is about: the customer's (`waba_info.waba_id`) for PARTNER_* events, else the entry's. */
export const accountOf = (u: OperatorAccountUpdate, entryWabaId: string | null): string | null =>
  u.waba_info?.waba_id !== undefined ? String(u.waba_info.waba_id) : entryWabaId;
