import type { MemberRole } from "../db/members";
import { hasRole } from "./roles";
import { redactWebhookUrl } from "../domain/webhook-view";

/** The URL in full for developers and owners, redacted for viewers. */
export function WebhookUrl({ url, role }: { url: string; role: MemberRole }) {
  return <code>{hasRole(role, "developer") ? url : redactWebhookUrl(url)}</code>;
}
