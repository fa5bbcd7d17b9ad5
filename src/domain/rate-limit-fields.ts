import type { RateInfo } from "../messages/send";
import { NUMBER_LIMIT, WORKSPACE_LIMIT, type WindowLimit } from "./rate-window";

interface Policy {
  name: string;
  limit: WindowLimit;
}

/** The two send limits, named as in `RateLimit-Policy`. */
const SEND_POLICIES: readonly Policy[] = [
  { name: "number", limit: NUMBER_LIMIT },
  { name: "workspace", limit: WORKSPACE_LIMIT },
];

const item = (name: string, params: Record<string, number>) =>
  [`"${name}"`, ...Object.entries(params).map(([k, v]) => `${k}=${v}`)].join(";");

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): every send limit, the same on every response. */
export const SEND_RATE_LIMIT_POLICY = SEND_POLICIES.map((p) =>
  item(p.name, { q: p.limit.limit, w: Math.ceil(p.limit.windowMs / 1000) }),
).join(", ");

/**
 * The rate fields of a send response, from the workspace object's `RateInfo` (the limit
 * closest to refusing): the draft's `RateLimit-Policy` and `RateLimit`, and the older
 * `RateLimit-Limit/Remaining/Reset` kept for their deprecation period (docs/customers/limits.md).
 */
export function sendRateLimitHeaders(rate: RateInfo): Record<string, string> {
  const policy = SEND_POLICIES.find((p) => p.name === rate.scope);
  return {
    "RateLimit-Policy": SEND_RATE_LIMIT_POLICY,
    RateLimit: item(policy?.name ?? "send", { r: rate.remaining, t: rate.resetSeconds }),
    "RateLimit-Limit": String(rate.limit),
    "RateLimit-Remaining": String(rate.remaining),
    "RateLimit-Reset": String(rate.resetSeconds),
  };
}
