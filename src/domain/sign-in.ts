import { membershipsWithPassword, setPasswordStatement, type MemberRow } from "../db/members";
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

/**
 * At most this many memberships of one email are checked at a sign-in, newest
 * first (one argon2id derivation each): the CPU of one sign-in stays bounded.
 */
export const MAX_SIGN_IN_MEMBERSHIPS = 10;

export type SignInResult =
  | { ok: true; kind: "session"; token: string; member: MemberRow }
  | { ok: true; kind: "choose"; memberIds: string[] }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; retryAfterMs: number };

// Throttle keys: the email is hashed so that addresses do not appear in object names.
export const emailKey = async (email: string): Promise<string> => `sign-in:email:${await sha256Hex(email)}`;
// The address as `clientAddress()` groups it (an IPv6 address counts as its /64), as the API does.
export const ipKey = (address: string): string => `sign-in:ip:${address}`;

/**
 * Email + password sign-in. Membership is per workspace, each with its own
 * password: the password is checked against every membership of the email
 * (up to MAX_SIGN_IN_MEMBERSHIPS). One match opens a session; several ask the
 * person to choose a workspace. Unknown emails, members without a password and
 * wrong passwords get the same answer, after at least one argon2id derivation
 * (against a dummy hash when there is no real one); throttling is keyed by the
 * submitted email whether or not it exists.
 */
export async function signIn(
  db: D1Database,
  env: Env,
  input: { email: string; password: string; clientAddress: string },
): Promise<SignInResult> {
  const byEmail = await emailKey(input.email);
  const [email, ip] = await Promise.all([
    signInAttempt(env, byEmail, SIGN_IN_EMAIL_LIMIT),
    signInAttempt(env, ipKey(input.clientAddress), SIGN_IN_IP_LIMIT),
  ]);
  if (!email.allowed || !ip.allowed) {
    return { ok: false, reason: "throttled", retryAfterMs: Math.max(email.retryAfterMs, ip.retryAfterMs) };
  }

  const memberships = await membershipsWithPassword(db, input.email, MAX_SIGN_IN_MEMBERSHIPS);
  if (memberships.length === 0) {
    await verifyPassword(input.password, null);
    return { ok: false, reason: "invalid" };
  }
  const matches: MemberRow[] = [];
  // One after the other: each derivation is CPU-bound, nothing is gained by starting them together.
  for (const m of memberships)
    if (m.password_hash !== null && (await verifyPassword(input.password, m.password_hash))) matches.push(m);
  if (matches.length === 0) return { ok: false, reason: "invalid" };

  await resetBuckets(env, byEmail, [SIGN_IN_BUCKET]);
  // Parameters raised since these hashes were made: store new ones now that we have the password.
  const rehashed = await Promise.all(
    matches
      .filter((m) => m.password_hash !== null && needsRehash(m.password_hash))
      .map(async (m) =>
        setPasswordStatement(db, m.id, m.password_hash ?? "", await hashPassword(input.password), isoNow()),
      ),
  );
  const [only] = matches;
  if (matches.length > 1 || only === undefined) {
    if (rehashed.length > 0) await db.batch(rehashed);
    return { ok: true, kind: "choose", memberIds: matches.map((m) => m.id) };
  }
  const { token, statements } = await openSession(db, only.id, { revokeOthers: false });
  await db.batch([...rehashed, ...statements]);
  return { ok: true, kind: "session", token, member: only };
}

/** Opens a session for a membership the person proved at sign-in (the workspace picker). */
export async function openChosenSession(db: D1Database, memberId: string): Promise<string> {
  const { token, statements } = await openSession(db, memberId, { revokeOthers: false });
  await db.batch(statements);
  return token;
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
  if (!(await verifyPassword(input.current, input.passwordHash)) || input.passwordHash === null)
    return { ok: false, reason: "invalid" };
  const newHash = await hashPassword(input.next);
  const { token, statements } = await openSession(db, input.memberId, { revokeOthers: true });
  await db.batch([setPasswordStatement(db, input.memberId, input.passwordHash, newHash, isoNow()), ...statements]);
  return { ok: true, token };
}
