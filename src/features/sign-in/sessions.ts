import {
  deleteMemberSessionsStatement,
  deleteSession,
  findSession,
  insertSessionStatement,
  purgeExpiredSessionsStatement,
  touchSession,
  type SessionWithMember,
} from "./store";
import { now } from "../../lib/clock";
import { randomBytes, sha256Hex, toBase64Url } from "../../lib/crypto";

/** A session ends 12 hours after its last use... */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** ...and 7 days after sign-in, whatever happens. */
export const SESSION_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * `last_seen_at` is written at most this often, not on every request: idle
 * expiry is then exact to within this margin, and a busy dashboard tab costs
 * one D1 write per 5 minutes.
 */
export const SESSION_TOUCH_EVERY_MS = 5 * 60 * 1000;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const iso = (ms: number) => new Date(ms).toISOString();

export const hashSessionToken = (token: string): Promise<string> => sha256Hex(token);

/**
 * Statements that open a session for the member (and purge a few expired ones
 * on the way); `revokeOthers` first ends every other session of the member
 * (password change, invitation redeemed). Run them in one batch.
 */
export async function openSession(db: D1Database, memberId: string, opts: { revokeOthers: boolean }) {
  const token = toBase64Url(randomBytes(32));
  const at = now();
  const statements = [
    ...(opts.revokeOthers ? [deleteMemberSessionsStatement(db, memberId)] : []),
    purgeExpiredSessionsStatement(db, iso(at)),
    insertSessionStatement(db, {
      token_hash: await hashSessionToken(token),
      member_id: memberId,
      created_at: iso(at),
      last_seen_at: iso(at),
      expires_at: iso(at + SESSION_ABSOLUTE_MS),
    }),
  ];
  return { token, statements };
}

/** The live session of a cookie token, or null (unknown, expired, revoked, or its member removed). */
export async function resolveSession(db: D1Database, token: string | undefined): Promise<SessionWithMember | null> {
  if (!token || !TOKEN.test(token)) return null;
  const hash = await hashSessionToken(token);
  const session = await findSession(db, hash);
  if (!session) return null;
  const at = now();
  const lastSeen = Date.parse(session.last_seen_at);
  if (at >= Date.parse(session.expires_at) || at >= lastSeen + SESSION_IDLE_MS) {
    await deleteSession(db, hash);
    return null;
  }
  if (at - lastSeen >= SESSION_TOUCH_EVERY_MS) await touchSession(db, hash, iso(at));
  return session;
}

export async function endSession(db: D1Database, token: string | undefined): Promise<void> {
  if (token && TOKEN.test(token)) await deleteSession(db, await hashSessionToken(token));
}
