import type { MemberRole } from "../db/members";
import { hasRole } from "./roles";

/**
 * A webhook URL as a viewer sees it: scheme and host only. Customers sometimes
 * put a token in the path or query of their endpoint; whoever may not change
 * the webhook has no need to read it.
 */
export function redactWebhookUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname === "/" && u.search === "" ? u.origin + "/" : `${u.origin}/…`;
  } catch {
    return "…";
  }
}

/** The URL in full for developers and owners, redacted for viewers. */
export function WebhookUrl({ url, role }: { url: string; role: MemberRole }) {
  return <code>{hasRole(role, "developer") ? url : redactWebhookUrl(url)}</code>;
}
