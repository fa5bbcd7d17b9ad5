import { applyOperatorQualityUpdate, recordOperatorAccountError } from "../db/channel-numbers";
import { isoNow } from "../lib/clock";
import { log } from "../lib/log";
import { CloudAccountUpdate, CloudQualityUpdate } from "../upstream/cloud-webhook-payload";

// The operator's business-account webhooks about a number's health (issue 22): they complement the
// hourly refresh of number-health.ts. Both functions validate on their own, log ids only (never a
// phone number), return normally for what they cannot use, and throw only when D1 fails (retried).

/** The display number's digits, or null when it has too few or too many to be one. */
const digitsOf = (s: string): string | null => {
  const d = s.replace(/\D/g, "");
  return d.length >= 4 && d.length <= 32 ? d : null;
};

/** A quality or tier change: applied to the matching connected live number's row. */
export async function applyQualityUpdate(env: Env, wabaId: string | null, raw: unknown): Promise<void> {
  const parsed = CloudQualityUpdate.safeParse(raw);
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

/** A ban or restriction of the business account, in words for `lastOperatorError`; null for other account events. */
export function accountRefusal(u: CloudAccountUpdate): string | null {
  const ban = u.ban_info?.waba_ban_state;
  if (u.ban_info && ban !== "REINSTATE") {
    return `The operator banned the business account (${u.event}${ban ? `, ${ban}` : ""}${u.ban_info.waba_ban_date ? ` on ${u.ban_info.waba_ban_date}` : ""}).`;
  }
  const restrictions = u.restriction_info ?? [];
  if (restrictions.length > 0 || u.event === "ACCOUNT_RESTRICTION") {
    const what = restrictions
      .map((r) => `${r.restriction_type ?? "restricted"}${r.expiration ? ` until ${r.expiration}` : ""}`)
      .join(", ");
    return `The operator restricted the business account (${u.event}${what ? `: ${what}` : ""}).`.slice(0, 300);
  }
  return null;
}

/** An account event: logged (ids and the event only); a ban or restriction becomes its live numbers' last operator error. */
export async function applyAccountUpdate(env: Env, wabaId: string | null, raw: unknown): Promise<void> {
  const parsed = CloudAccountUpdate.safeParse(raw);
  if (!parsed.success) {
    log("warn", "operator account update not understood; dropped", { wabaId, issues: parsed.error.issues.length });
    return;
  }
  const refusal = accountRefusal(parsed.data);
  const ids = refusal && wabaId ? await recordOperatorAccountError(env.DB, wabaId, refusal) : [];
  log(refusal ? "warn" : "info", "operator account update", {
    wabaId,
    event: parsed.data.event,
    refusal: refusal !== null,
    channelNumberIds: ids.join(","),
  });
}
