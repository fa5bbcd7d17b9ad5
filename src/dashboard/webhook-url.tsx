import type { Role } from "../lib/roles";
import { hasRole } from "./roles";
import { redactWebhookUrl } from "../domain/webhook-view";

/** The URL in full for developers and owners, redacted for viewers. */
export function WebhookUrl({ url, role }: { url: string; role: Role }) {
  return <code>{hasRole(role, "developer") ? url : redactWebhookUrl(url)}</code>;
}
