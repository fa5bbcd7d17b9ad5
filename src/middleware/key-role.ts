import type { OpenAPIHono } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../context";
import { hasRole, KeyRoleSchema, type KeyRole } from "../lib/roles";
import { ApiError } from "../lib/errors";

/** What a route without a declared role needs: only owner keys reach it, so a forgotten declaration opens nothing. */
const UNDECLARED: KeyRole = "owner";

/**
 * The least key role of each route of `router`, as its definition declares it
 * (`"x-key-role"`, which the OpenAPI document shows), keyed as Hono matches it:
 * `POST /api/v1/channel-numbers`, `DELETE /api/v1/channel-numbers/:id`.
 */
function declaredRoles(router: OpenAPIHono<AppEnv>, basePath: string): Map<string, KeyRole> {
  const roles = new Map<string, KeyRole>();
  for (const d of router.openAPIRegistry.definitions) {
    if (d.type !== "route") continue;
    const role = KeyRoleSchema.safeParse(d.route["x-key-role"]);
    if (!role.success) continue;
    const path = basePath + d.route.path.replaceAll(/\{([^}]+)\}/g, ":$1");
    roles.set(`${d.route.method.toUpperCase()} ${path}`, role.data);
  }
  return roles;
}

const asTemplate = (honoPath: string): string => honoPath.replaceAll(/:([^/]+)/g, "{$1}");

/**
 * After authentication: refuses (403 `insufficient_role`, before the route's
 * own middleware, validation or handler run, so nothing is read or changed)
 * a key whose role is below what the matched route declares. One check for
 * every route of the router, v1 and v2 alike; the key's role comes with its
 * cached principal, so the check reads nothing. Unknown paths fall through to
 * the 404/405 answers.
 */
export function keyRoleGate(router: OpenAPIHono<AppEnv>, basePath: string) {
  // Built on the first request, once every route is registered.
  let roles: Map<string, KeyRole> | undefined;
  return createMiddleware<AppEnv>(async (c, next) => {
    roles ??= declaredRoles(router, basePath);
    const endpoint = matchedRoutes(c).find((r) => r.method !== "ALL");
    if (endpoint) {
      const needed = roles.get(`${endpoint.method} ${endpoint.path}`) ?? UNDECLARED;
      const { role } = c.get("principal");
      if (!hasRole(role, needed)) {
        throw new ApiError(
          "insufficient_role",
          `This API key's role is ${role}; ${endpoint.method} ${asTemplate(endpoint.path.slice(basePath.length))} needs a ${needed} key` +
            `${needed === "owner" ? "" : " or higher"}. A workspace member makes one on the dashboard's API keys page.`,
        );
      }
    }
    await next();
  });
}
