import { findMemberByEmail, setPasswordStatement } from "../db/members";
import { resetBuckets, takeToken, type ThrottleDecision } from "../lib/throttle";
import { isoNow } from "../lib/clock";
import { sha256Hex } from "../lib/crypto";
import { hashPassword, needsRehash, verifyPassword } from "../lib/password";
import { openSession } from "./dashboard-session";

/** Attempts per email: a burst of 10, refilled over 15 minutes (a success refills it). */
export const SIGN_IN_EMAIL_LIMIT = 10;
/** Attempts per client IP: a burst of 50 over 15 minutes, for offices behind one address. */
export const SIGN_IN_IP_LIMIT = 50;
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;

const SIGN_IN_BUCKET = "sign-in";

/**
 * One sign-in attempt against a scope's budget (the shared Throttle object,
 * src/lib/throttle.ts): `limit` attempts in a burst, refilled over 15 minutes.
 */
export const signInAttempt = (env: Env, scope: string, limit: number): Promise<ThrottleDecision> =>
  takeToken(env, scope, [{ name: SIGN_IN_BUCKET, limit, periodSeconds: SIGN_IN_WINDOW_MS / 1000 }]);

export type SignInResult =
  | { ok: true; token: string }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; retryAfterMs: number };

// Throttle keys: the email is hashed so that addresses do not appear in object names.
export const emailKey = async (email: string): Promise<string> => `sign-in:email:${await sha256Hex(email)}`;
// The address as `clientAddress()` groups it (an IPv6 address counts as its /64), as the API does.
export const ipKey = (address: string): string => `sign-in:ip:${address}`;

/**
 * Email + password sign-in. Unknown emails, members without a password and
 * wrong passwords take the same path (one argon2id derivation, against a dummy
 * hash when there is no real one) and get the same answer; throttling is keyed
 * by the submitted email whether or not it exists.
 */
export async function signIn(db: D1Database, env: Env, input: { email: string; password: string; clientAddress: string }): Promise<SignInResult> {
  const byEmail = await emailKey(input.email);
  const [email, ip] = await Promise.all([
    signInAttempt(env, byEmail, SIGN_IN_EMAIL_LIMIT),
    signInAttempt(env, ipKey(input.clientAddress), SIGN_IN_IP_LIMIT),
  ]);
  if (!email.allowed || !ip.allowed) {
    return { ok: false, reason: "throttled", retryAfterMs: Math.max(email.retryAfterMs, ip.retryAfterMs) };
  }

  const member = await findMemberByEmail(db, input.email);
  const passwordHash = member?.password_hash ?? null;
  const valid = await verifyPassword(input.password, passwordHash);
  if (!valid || !member || passwordHash === null) return { ok: false, reason: "invalid" };

  await resetBuckets(env, byEmail, [SIGN_IN_BUCKET]);
  const { token, statements } = await openSession(db, member.id, { revokeOthers: false });
  // Parameters raised since this hash was made: store a new one now that we have the password.
  const rehashed = needsRehash(passwordHash) ? [setPasswordStatement(db, member.id, passwordHash, await hashPassword(input.password), isoNow())] : [];
  await db.batch([...rehashed, ...statements]);
  return { ok: true, token };
}

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
  if (!(await verifyPassword(input.current, input.passwordHash)) || input.passwordHash === null) return { ok: false, reason: "invalid" };
  const newHash = await hashPassword(input.next);
  const { token, statements } = await openSession(db, input.memberId, { revokeOthers: true });
  await db.batch([setPasswordStatement(db, input.memberId, input.passwordHash, newHash, isoNow()), ...statements]);
  return { ok: true, token };
}
