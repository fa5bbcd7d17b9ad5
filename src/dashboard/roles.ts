import { createMiddleware } from "hono/factory";
import { hasRole, type Role } from "../lib/roles";
import type { DashboardEnv } from "./context";
import { forbiddenPage } from "./pages/errors";

/**
 * What each role may change. Viewers read everything (messages included) and
 * change nothing (but their own password); developers manage keys and
 * webhooks; owners do everything, members included.
 */
export { hasRole };

/** Guards a dashboard POST: below `atLeast`, a 403 page and nothing changes. */
export const requireRole = (atLeast: Role) =>
  createMiddleware<DashboardEnv>(async (c, next) => {
    if (!hasRole(c.get("session").role, atLeast)) return forbiddenPage(c, atLeast);
    await next();
  });
