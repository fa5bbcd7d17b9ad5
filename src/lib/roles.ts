import { z } from "@hono/zod-openapi";

/**
 * Members and API keys share three roles, ranked: viewers read, developers also
 * send and manage webhooks, sandbox helpers and keys, owners also change numbers
 * (and, as members, the membership). One ranking for both is what lets a key
 * never exceed the member who made it.
 */
export const ROLES = ["owner", "developer", "viewer"] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 0, developer: 1, owner: 2 };

export const hasRole = (role: Role, atLeast: Role): boolean => RANK[role] >= RANK[atLeast];

/** An API key's role: the least it needs is declared on every public API route (`x-key-role`). */
export const KeyRoleSchema = z
  .enum(ROLES, { error: "role must be owner, developer or viewer." })
  .openapi("ApiKeyRole", {
    description:
      "What the key may do, fixed when it was made: `viewer` reads only; `developer` also sends and manages webhooks and " +
      "sandbox test contacts; `owner` also connects, re-keys and disconnects numbers. Each operation's `x-key-role` " +
      "names the least role it needs; a key below it gets 403 `insufficient_role`.",
  });
export type KeyRole = z.infer<typeof KeyRoleSchema>;

/** The roles a member may give a new key: their own and those below it, most powerful first. */
export const grantableKeyRoles = (memberRole: Role): KeyRole[] => ROLES.filter((r) => hasRole(memberRole, r));
