import { findByUuid } from "../../lib/job-id";
import { getWebhook, type WebhookRow } from "./store";

/** A webhook of the workspace by id; a malformed or foreign id reads as missing. */
export async function findOwnWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow | null> {
  return findByUuid(id, (stored) => getWebhook(db, workspaceId, stored));
}
