import { findMemberByEmail, setPasswordStatement } from "../db/members";
import { hit, resetThrottle } from "../durable-objects/sign-in-throttle";
import { isoNow } from "../lib/clock";
import { sha256Hex } from "../lib/crypto";
import { hashPassword, needsRehash, verifyPassword } from "../lib/password";
import { openSession } from "./dashboard-session";

/** Attempts per email in any 15 minutes (a success clears the count). */
export const SIGN_IN_EMAIL_LIMIT = 10;
/** Attempts per client IP in any 15 minutes: higher, for offices behind one address. */
export const SIGN_IN_IP_LIMIT = 50;
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;

export type SignInResult =
  | { ok: true; token: string }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; retryAfterMs: number };

// Throttle keys: the email is hashed so that addresses do not appear in object names.
export const emailKey = async (email: string): Promise<string> => `sign-in:email:${await sha256Hex(email)}`;
export const ipKey = (ip: string): string => `sign-in:ip:${ip}`;

/**
 * Email + password sign-in. Unknown emails, members without a password and
 * wrong passwords take the same path (one argon2id derivation, against a dummy
 * hash when there is no real one) and get the same answer; throttling is keyed
 * by the submitted email whether or not it exists.
 */
export async function signIn(db: D1Database, env: Env, input: { email: string; password: string; clientIp: string }): Promise<SignInResult> {
  const byEmail = await emailKey(input.email);
  const [email, ip] = await Promise.all([
    hit(env, byEmail, SIGN_IN_EMAIL_LIMIT, SIGN_IN_WINDOW_MS),
    hit(env, ipKey(input.clientIp), SIGN_IN_IP_LIMIT, SIGN_IN_WINDOW_MS),
  ]);
  if (!email.allowed || !ip.allowed) {
    return { ok: false, reason: "throttled", retryAfterMs: Math.max(email.retryAfterMs, ip.retryAfterMs) };
  }

  const member = await findMemberByEmail(db, input.email);
  const passwordHash = member?.password_hash ?? null;
  const valid = await verifyPassword(input.password, passwordHash);
  if (!valid || !member || passwordHash === null) return { ok: false, reason: "invalid" };

  await resetThrottle(env, byEmail);
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
  const throttle = await hit(env, await emailKey(input.email), SIGN_IN_EMAIL_LIMIT, SIGN_IN_WINDOW_MS);
  if (!throttle.allowed) return { ok: false, reason: "throttled", retryAfterMs: throttle.retryAfterMs };
  if (!(await verifyPassword(input.current, input.passwordHash)) || input.passwordHash === null) return { ok: false, reason: "invalid" };
  const newHash = await hashPassword(input.next);
  const { token, statements } = await openSession(db, input.memberId, { revokeOthers: true });
  await db.batch([setPasswordStatement(db, input.memberId, input.passwordHash, newHash, isoNow()), ...statements]);
  return { ok: true, token };
}
