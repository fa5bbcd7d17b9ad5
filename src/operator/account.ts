import { z } from "@hono/zod-openapi";
import { config, type ConfigVars } from "../config";
import { log } from "../lib/log";

/** What the operator says about a live number, as shown to its owner and stored on its row. */
export interface OperatorProfile {
  displayPhoneNumber: string;
  verifiedName: string | null;
  qualityRating: string | null;
  messagingLimitTier: string | null;
}

/** The request field an operator refusal is about: errors name it. */
export type OperatorField = "upstream.accessToken" | "upstream.phoneNumberId" | "upstream.wabaId";

export type OperatorOutcome<T> =
  | { ok: true; value: T }
  | { ok: false; problem: "refused"; field: OperatorField; reason: string }
  | { ok: false; problem: "unavailable"; reason: string };

// Operator strings are stored in D1 and echoed on pages: bounded, whatever the operator sends.
const Short = z.string().max(200);
const NumberAnswer = z.object({
  id: z.string().optional(),
  display_phone_number: Short.optional(),
  verified_name: Short.optional(),
  quality_rating: Short.optional(),
  messaging_limit_tier: Short.optional(),
});
const PhoneNumbersAnswer = z.object({ data: z.array(z.object({ id: z.string() })).optional() });
const SubscribeAnswer = z.object({ success: z.boolean().optional() });
const ErrorAnswer = z.object({
  error: z.object({ code: z.union([z.number(), z.string()]).optional(), message: z.string().optional() }),
});

export const PROFILE_FIELDS = "id,display_phone_number,verified_name,quality_rating,messaging_limit_tier";

/** Digits with a leading '+', the form numbers are stored in ("+1 555-777-0000" → "+15557770000"). */
export const normalizeDisplayNumber = (s: string): string => `+${s.replace(/\D/g, "")}`;

export async function call(
  env: ConfigVars,
  method: "GET" | "POST",
  path: string,
  token: string,
): Promise<{ res: Response; body: unknown } | null> {
  const { baseUrl, version, timeoutMs } = config(env).operator;
  try {
    const res = await fetch(`${baseUrl.replace(/\/+$/, "")}/${version}/${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}` },
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    let body: unknown = null;
    try {
      body = await res.json();
    } catch {
      // judged by the status alone
    }
    return { res, body };
  } catch (err) {
    // The token is in a header only; the path holds ids, never a secret.
    log("warn", "operator unreachable", {
      path: path.split("?")[0],
      detail: err instanceof Error ? err.name : "unknown",
    });
    return null;
  }
}

/** "HTTP 400, code 100: Unsupported get request" — the operator's own reason, for the error a person reads. */
export function operatorReason(res: Response, body: unknown): string {
  const parsed = ErrorAnswer.safeParse(body);
  const e = parsed.success ? parsed.data.error : undefined;
  const code = e?.code !== undefined ? `, code ${String(e.code)}` : "";
  const message = e?.message ? `: ${e.message.slice(0, 200)}` : "";
  return `HTTP ${res.status}${code}${message}`;
}

/** Whether the operator refused the token itself: HTTP 401, or its code 190 (invalid or expired). */
export const isTokenRefusal = (res: Response, body: unknown): boolean => {
  const parsed = ErrorAnswer.safeParse(body);
  return res.status === 401 || (parsed.success && String(parsed.data.error.code) === "190");
};

/** Judges a non-success answer: the operator's 5xx is ours to retry later, a token refusal names the token, anything else `field`. */
function refusal<T>(
  answer: { res: Response; body: unknown } | null,
  field: OperatorField,
  what: string,
): OperatorOutcome<T> {
  if (!answer)
    return {
      ok: false,
      problem: "unavailable",
      reason: `The operator could not be reached (${what}); nothing was stored. Retry later.`,
    };
  const { res, body } = answer;
  if (res.status >= 500)
    return {
      ok: false,
      problem: "unavailable",
      reason: `The operator answered ${operatorReason(res, body)} (${what}); nothing was stored. Retry later.`,
    };
  if (isTokenRefusal(res, body))
    return {
      ok: false,
      problem: "refused",
      field: "upstream.accessToken",
      reason: `The operator refused this token (${operatorReason(res, body)}).`,
    };
  return {
    ok: false,
    problem: "refused",
    field,
    reason: `The operator refused ${what} (${operatorReason(res, body)}).`,
  };
}

/** The number's record for this token (`GET /{phone-number-id}`): proves the token controls the number. */
export async function fetchNumberProfile(
  env: ConfigVars,
  phoneNumberId: string,
  token: string,
): Promise<OperatorOutcome<OperatorProfile>> {
  const answer = await call(env, "GET", `${phoneNumberId}?fields=${PROFILE_FIELDS}`, token);
  const parsed = NumberAnswer.safeParse(answer?.body);
  if (answer?.res.ok && parsed.success && parsed.data.id === phoneNumberId && parsed.data.display_phone_number) {
    const p = parsed.data;
    return {
      ok: true,
      value: {
        displayPhoneNumber: normalizeDisplayNumber(p.display_phone_number ?? ""),
        verifiedName: p.verified_name ?? null,
        qualityRating: p.quality_rating ?? null,
        messagingLimitTier: p.messaging_limit_tier ?? null,
      },
    };
  }
  if (answer?.res.ok)
    return {
      ok: false,
      problem: "refused",
      field: "upstream.phoneNumberId",
      reason: `The operator did not confirm phone number id ${phoneNumberId} for this token.`,
    };
  return refusal(answer, "upstream.phoneNumberId", `phone number id ${phoneNumberId} for this token`);
}

/**
 * Whether the number belongs to the business account (`GET /{waba-id}/phone_numbers`): the
 * operator sends a number's webhooks for the account it belongs to, so a wrong account id
 * would leave the number without inbound messages or status reports.
 */
export async function confirmNumberInAccount(
  env: ConfigVars,
  wabaId: string,
  phoneNumberId: string,
  token: string,
): Promise<OperatorOutcome<null>> {
  const answer = await call(env, "GET", `${wabaId}/phone_numbers?fields=id&limit=100`, token);
  if (!answer?.res.ok) return refusal(answer, "upstream.wabaId", `business account ${wabaId} for this token`);
  const parsed = PhoneNumbersAnswer.safeParse(answer.body);
  if (parsed.success && (parsed.data.data ?? []).some((n) => n.id === phoneNumberId)) return { ok: true, value: null };
  return {
    ok: false,
    problem: "refused",
    field: "upstream.wabaId",
    reason: `Phone number id ${phoneNumberId} is not a number of business account ${wabaId}.`,
  };
}

/** Subscribes our app to the business account's webhooks (`POST /{waba-id}/subscribed_apps`). */
export async function subscribeApp(env: ConfigVars, wabaId: string, token: string): Promise<OperatorOutcome<null>> {
  const answer = await call(env, "POST", `${wabaId}/subscribed_apps`, token);
  const parsed = SubscribeAnswer.safeParse(answer?.body);
  if (answer?.res.ok && parsed.success && parsed.data.success !== false) return { ok: true, value: null };
  if (answer?.res.ok)
    return {
      ok: false,
      problem: "refused",
      field: "upstream.wabaId",
      reason: `The operator did not subscribe the app to business account ${wabaId}'s webhooks.`,
    };
  return refusal(answer, "upstream.wabaId", `the webhook subscription of business account ${wabaId}`);
}

/** Everything a live number needs before it is stored: its record, its account, the webhook subscription, in that order. */
export async function verifyAndSubscribe(
  env: ConfigVars,
  n: { phoneNumberId: string; wabaId: string; accessToken: string },
): Promise<OperatorOutcome<OperatorProfile>> {
  const profile = await fetchNumberProfile(env, n.phoneNumberId, n.accessToken);
  if (!profile.ok) return profile;
  const inAccount = await confirmNumberInAccount(env, n.wabaId, n.phoneNumberId, n.accessToken);
  if (!inAccount.ok) return inAccount;
  const subscribed = await subscribeApp(env, n.wabaId, n.accessToken);
  if (!subscribed.ok) return subscribed;
  return profile;
}
