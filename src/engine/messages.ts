import type { z } from "@hono/zod-openapi";
import { sha256Hex } from "../lib/crypto";
import { canonicalJson, type SendMessageRequest } from "../domain/send-request";
import type { SendMessageRequestV2 } from "../domain/send-request-v2";
import type { Message } from "../messages/message";
import { findByUuid } from "../lib/job-id";
import type { CommittedChange } from "../messages/timeline";
import { toDeliveryView, type WebhookDelivery } from "../domain/webhook-view";
import type { SendContent, SendOutcome } from "../messages/send";
import type { Keyset, MessageFilter } from "../messages/list";
import { toMessageView, type MessageRow } from "../messages/record";
import { changesOf } from "../durable-objects/workspace/message-events";
import { workspaceObject } from "./objects";

export interface SendInput {
  workspaceId: string;
  idempotencyKey: string;
  /**
   * The validated request, as the API receives it or the dashboard's form builds it: the
   * Idempotency-Key binds its canonical JSON, so a replay must carry the same request.
   */
  request: SendMessageRequest | SendMessageRequestV2;
  content: SendContent;
}

/**
 * A send, for every client (the API's `POST /messages` of each version, the dashboard's test send):
 * the workspace's object admits it (idempotency, the number, quota and limits) and records it, or
 * says why not. The caller maps the outcome to its own answer (an HTTP status, a form's errors).
 */
export async function sendMessage(env: Env, input: SendInput): Promise<SendOutcome> {
  const { workspaceId, idempotencyKey, request, content } = input;
  const fingerprint = await sha256Hex(canonicalJson(request));
  return workspaceObject(env, workspaceId).send({
    workspaceId,
    idempotencyKey,
    fingerprint,
    request: { channelNumberId: request.channelNumberId, to: request.to, toUserId: request.toUserId },
    content,
  });
}

/** A message as the API shows it, and its changes in the order they were committed (its timeline's order). */
export interface MessageRead {
  message: Message;
  changes: CommittedChange[];
}

/**
 * One message of the workspace, wherever it lives now (hot, history); null for an id that is not a
 * UUID (no lookup) or names no message of this workspace (another workspace's reads as unknown).
 */
export async function readMessage(env: Env, workspaceId: string, id: string): Promise<MessageRead | null> {
  return readMessageAs(env, workspaceId, id, toMessageView);
}

/** `readMessage`, shown by another version's view (`view`: messages/message-v2.ts, say). */
export async function readMessageAs<V>(
  env: Env,
  workspaceId: string,
  id: string,
  view: (row: MessageRow) => V,
): Promise<{ message: V; changes: CommittedChange[] } | null> {
  const row = await findByUuid(id, (stored) => workspaceObject(env, workspaceId).getMessage(stored));
  return row ? { message: view(row), changes: changesOf(row) } : null;
}

/** One page of the workspace's messages, newest first, strictly older than `after`; `next` is where the next page starts. */
export async function listMessages(
  env: Env,
  workspaceId: string,
  filter: MessageFilter,
  after: Keyset | null,
  limit: number,
): Promise<{ messages: Message[]; next: Keyset | null }> {
  return listMessagesAs(env, workspaceId, filter, after, limit, toMessageView);
}

/** `listMessages`, shown by another version's view. */
export async function listMessagesAs<V>(
  env: Env,
  workspaceId: string,
  filter: MessageFilter,
  after: Keyset | null,
  limit: number,
  view: (row: MessageRow) => V,
): Promise<{ messages: V[]; next: Keyset | null }> {
  const page = await workspaceObject(env, workspaceId).listMessages(filter, after, limit);
  return { messages: page.rows.map((row) => view(row)), next: page.next };
}

/** Attempts to deliver a message's events to its number's webhook (kept 3 days), oldest first. */
export async function messageDeliveries(
  env: Env,
  workspaceId: string,
  messageId: string,
): Promise<z.infer<typeof WebhookDelivery>[]> {
  const attempts = await workspaceObject(env, workspaceId).deliveriesAbout(messageId);
  return attempts.map((a) => toDeliveryView(a.webhook_id, a));
}
