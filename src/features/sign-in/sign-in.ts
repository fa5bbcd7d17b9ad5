import { membershipsWithPassword, setPasswordStatement, type MemberRow } from "../members/store";
import { takeToken, type ThrottleDecision } from "../../lib/throttle-client";
import { isoNow } from "../../lib/clock";
import { randomBytes, sha256Hex, toBase64Url } from "../../lib/crypto";
import { hashPassword, needsRehash, verifyPassword } from "../../lib/password";
import { bucket, scopes } from "../../domain/abuse-limits";
import { openSession } from "./sessions";

/**
 * Attempts per email: a burst of 10, refilled over 15 minutes. A success spends its attempt like a
 * failure and refills nothing: the memberships of an address are not all the same person's (any
 * workspace's owner can make one, with a password of their choosing), so a sign-in that proves one
 * of them must not buy guesses at the others.
 */
export const SIGN_IN_EMAIL_LIMIT = 10;
/** Attempts per client IP: a burst of 50 over 15 minutes, for offices behind one address. */
export const SIGN_IN_IP_LIMIT = 50;
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;

const SIGN_IN_BUCKET = "sign-in";

/**
 * One sign-in attempt against a scope's budget (the shared Throttle object,
 * src/lib/throttle-client.ts): `limit` attempts in a burst, refilled over 15 minutes.
 */
export const signInAttempt = (env: Env, scope: string, limit: number): Promise<ThrottleDecision> =>
  takeToken(env, scope, [{ name: SIGN_IN_BUCKET, limit, periodSeconds: SIGN_IN_WINDOW_MS / 1000 }]);

/**
 * At most this many memberships of one email are checked at a sign-in, oldest
 * first (one argon2id derivation each): the CPU of one sign-in stays bounded.
 */
export const MAX_SIGN_IN_MEMBERSHIPS = 10;

export type SignInResult =
  | { ok: true; kind: "session"; token: string; member: MemberRow }
  | { ok: true; kind: "choose"; choices: ProvedMembership[]; nonce: string }
  | { ok: false; reason: "invalid"; tried: MemberRow[] }
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
    return { ok: false, reason: "invalid", tried: [] };
  }
  const matches: MemberRow[] = [];
  // One after the other: each derivation is CPU-bound, nothing is gained by starting them together.
  for (const m of memberships)
    if (m.password_hash !== null && (await verifyPassword(input.password, m.password_hash))) matches.push(m);
  if (matches.length === 0) return { ok: false, reason: "invalid", tried: memberships };

  // Parameters raised since these hashes were made: store new ones now that we have the password.
  const stored = await Promise.all(
    matches.map(async (m) => {
      const old = m.password_hash ?? "";
      if (!needsRehash(old)) return { member: m, hash: old, statement: null };
      const hash = await hashPassword(input.password);
      return { member: m, hash, statement: setPasswordStatement(db, m.id, old, hash, isoNow()) };
    }),
  );
  const rehashed = stored.flatMap((x) => (x.statement ? [x.statement] : []));
  const [only] = matches;
  if (matches.length > 1 || only === undefined) {
    if (rehashed.length > 0) await db.batch(rehashed);
    const choices = await Promise.all(
      stored.map(async (x) => ({ memberId: x.member.id, proof: await passwordProof(x.member.id, x.hash) })),
    );
    return { ok: true, kind: "choose", choices, nonce: toBase64Url(randomBytes(16)) };
  }
  const { token, statements } = await openSession(db, only.id, { revokeOthers: false });
  await db.batch([...rehashed, ...statements]);
  return { ok: true, kind: "session", token, member: only };
}

/**
 * What a sign-in proved about one membership: a digest of the membership's password hash as it
 * stood. A reset (password cleared), a password change or a removal since then no longer matches.
 */
export const passwordProof = (memberId: string, passwordHash: string): Promise<string> =>
  sha256Hex(`${memberId}\n${passwordHash}`);

/** One membership a sign-in proved, for the workspace picker. */
export interface ProvedMembership {
  memberId: string;
  proof: string;
}

/**
 * Whether a failed sign-in at one of the workspace's memberships is still recorded in its audit
 * log: at most ABUSE_LIMITS.signInFailureTrace an hour per workspace, so that anyone who knows an
 * address cannot fill a workspace's log (nor spend its D1 writes) by failing on purpose.
 */
export async function mayTraceFailedSignIn(env: Env, workspaceId: string): Promise<boolean> {
  return (await takeToken(env, scopes.workspace(workspaceId), [bucket("signInFailureTrace")])).allowed;
}
