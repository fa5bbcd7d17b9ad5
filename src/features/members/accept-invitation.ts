import { hashInvitationToken } from "../../domain/members";
import { isoNow } from "../../lib/clock";
import { hashPassword } from "../../lib/password";
import { openSession } from "../sign-in/sessions";
import { redeemInvitation, type MemberRow } from "./store";

/**
 * Sets the invited member's password from the invitation link's token and opens their session
 * (ending any other of theirs); null when the link is no longer valid. The link is spent and the
 * password set in one statement, so a second submission finds nothing.
 */
export async function acceptInvitation(
  db: D1Database,
  token: string,
  password: string,
): Promise<{ member: MemberRow; sessionToken: string } | null> {
  const member = await redeemInvitation(db, await hashInvitationToken(token), await hashPassword(password), isoNow());
  if (!member) return null;
  const session = await openSession(db, member.id, { revokeOthers: true });
  await db.batch(session.statements);
  return { member, sessionToken: session.token };
}
