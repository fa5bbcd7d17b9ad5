import { z } from "@hono/zod-openapi";
import { ROLES } from "../lib/roles";
import { sha256Hex } from "../lib/crypto";

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_MEMBERS_PER_WORKSPACE = 50;
/** NIST SP 800-63B: at least 8 (we ask 12), and long passphrases must fit. */
export const PASSWORD_MIN_CHARS = 12;
export const PASSWORD_MAX_CHARS = 256;

const INVITATION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const MemberEmail = z
  .string({ error: "email must be a string." })
  .trim()
  .max(254, { error: "email is longer than 254 characters." })
  .email({ error: "email is not an email address." })
  .transform((e) => e.toLowerCase());

export const MemberRoleSchema = z.enum(ROLES, { error: "role must be owner, developer or viewer." });

export const isWellFormedInvitationToken = (token: string): boolean => INVITATION_TOKEN.test(token);
export const hashInvitationToken = (token: string): Promise<string> => sha256Hex(token);

export const invitationUrl = (origin: string, token: string): string => `${origin}/dashboard/invitations/${token}`;
