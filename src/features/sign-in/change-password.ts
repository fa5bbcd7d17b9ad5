import { setPasswordStatement } from "../members/store";
import { isoNow } from "../../lib/clock";
import { hashPassword, verifyPassword } from "../../lib/password";
import { openSession } from "./sessions";
import { emailKey, SIGN_IN_EMAIL_LIMIT, signInAttempt } from "./sign-in";

export type PasswordChangeResult =
  | { ok: true; token: string }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; retryAfterMs: number };

/**
 * A signed-in member replaces their password. The current one is checked
 * under the same per-email throttle as sign-in (a stolen session cannot
 * brute-force it); on success every session of the member ends and a new one
 * is returned for this browser.
 */
export async function changePassword(
  db: D1Database,
  env: Env,
  input: { memberId: string; email: string; passwordHash: string | null; current: string; next: string },
): Promise<PasswordChangeResult> {
  const throttle = await signInAttempt(env, await emailKey(input.email), SIGN_IN_EMAIL_LIMIT);
  if (!throttle.allowed) return { ok: false, reason: "throttled", retryAfterMs: throttle.retryAfterMs };
  if (!(await verifyPassword(input.current, input.passwordHash)) || input.passwordHash === null)
    return { ok: false, reason: "invalid" };
  const newHash = await hashPassword(input.next);
  const { token, statements } = await openSession(db, input.memberId, { revokeOthers: true });
  await db.batch([setPasswordStatement(db, input.memberId, input.passwordHash, newHash, isoNow()), ...statements]);
  return { ok: true, token };
}
