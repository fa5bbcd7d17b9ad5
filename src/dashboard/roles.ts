import { createMiddleware } from "hono/factory";
import type { MemberRole } from "../db/members";
import type { DashboardEnv } from "./context";
import { forbiddenPage } from "./pages/errors";

/**
 * What each role may change. Viewers read everything (messages included) and
 * change nothing (but their own password); developers manage keys and
 * webhooks; owners do everything, members included.
 */
const RANK: Record<MemberRole, number> = { viewer: 0, developer: 1, owner: 2 };

export const hasRole = (role: MemberRole, atLeast: MemberRole): boolean => RANK[role] >= RANK[atLeast];

/** Guards a dashboard POST: below `atLeast`, a 403 page and nothing changes. */
export const requireRole = (atLeast: MemberRole) =>
  createMiddleware<DashboardEnv>(async (c, next) => {
    if (!hasRole(c.get("session").role, atLeast)) return forbiddenPage(c, atLeast);
    await next();
  });
