import { timingSafeEqualStrings } from "../../lib/crypto";
import { takeToken } from "../../lib/throttle-client";
import { membersWithWorkspace, type MemberWithWorkspace } from "../members/store";
import { openSession } from "./sessions";
import { passwordProof, type ProvedMembership } from "./sign-in";

// The workspace picker: a sign-in that proved several memberships lets the person open one of them.

/** The memberships of `choices` whose password is still the one the sign-in proved. */
export async function stillProved(db: D1Database, choices: ProvedMembership[]): Promise<MemberWithWorkspace[]> {
  const rows = await membersWithWorkspace(
    db,
    choices.map((x) => x.memberId),
  );
  const current = await Promise.all(
    rows.map(async (m) => {
      const proof = choices.find((x) => x.memberId === m.id)?.proof;
      const ok =
        proof !== undefined &&
        m.password_hash !== null &&
        (await timingSafeEqualStrings(proof, await passwordProof(m.id, m.password_hash)));
      return ok ? m : null;
    }),
  );
  return current.filter((m): m is MemberWithWorkspace => m !== null);
}

// A choice opens one session at most: its nonce is spent in the shared Throttle object (one token,
// refilled only after twice the choice's lifetime, when the sealed cookie has long expired).
const CHOICE_BUCKET = "workspace-choice";

/**
 * Opens a session for a membership the person proved at sign-in (the workspace picker): only if
 * its password is still the one proved, and only once per sign-in (`nonce`).
 */
export async function openChosenSession(
  db: D1Database,
  env: Env,
  choice: { nonce: string; chosen: ProvedMembership; lifetimeSeconds: number },
): Promise<{ token: string; member: MemberWithWorkspace } | null> {
  const [member] = await stillProved(db, [choice.chosen]);
  if (!member) return null;
  const spent = await takeToken(env, `sign-in:choice:${choice.nonce}`, [
    { name: CHOICE_BUCKET, limit: 1, periodSeconds: 2 * choice.lifetimeSeconds },
  ]);
  if (!spent.allowed) return null;
  const { token, statements } = await openSession(db, member.id, { revokeOthers: false });
  await db.batch(statements);
  return { token, member };
}
