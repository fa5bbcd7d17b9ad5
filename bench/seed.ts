// `npm run bench`: message records written into a workspace object by production's own code (its
// slot tables, job ids, inbound ids, status transitions and error codes), so that GET /messages is
// measured on a workspace with a million records without sending them for hours. It runs inside
// the object (bench/worker.ts for the bench, test/worker.ts for its test): no copy of the object's
// schema lives here, and a change to it reaches the seeded records as it reaches sent ones.
import { z } from "zod";
import { inboundMessageId, newJobId } from "../src/lib/job-id";
import { canonicalJson } from "../src/domain/send-request";
import { sha256Hex } from "../src/lib/crypto";
import { permanentError } from "../src/operator/error-codes";
import type { SlotTables } from "../src/durable-objects/workspace/day-tables";
import type { StatusUpdate } from "../src/messages/status";
import { type MessageRow, type LifecycleState } from "../src/messages/record";
import { insertInbound, insertOutbound, updateRecord } from "../src/durable-objects/workspace/records";
import { applyTransition } from "../src/durable-objects/workspace/status-transition";

/** How far back the seeded records go: the hot tables of a busy workspace, under the 48 hours after which tiering starts. */
export const SEED_SPAN_MS = 40 * 60 * 60 * 1000;
/** The newest record is this much older than `now`: none counts in the 1200-per-minute window. */
export const RATE_WINDOW_MARGIN_MS = 5 * 60 * 1000;
export const BODY_CHARS = 200;
/** Records of the last chunk handed back with their list fields: the newest ones, for the bench to check pages against. */
export const TAIL = 2_000;

/** One call's share of a seed: records `from` to `to` (exclusive) of `count`, spread over the span before `now`. */
export const SeedChunk = z.strictObject({
  workspaceId: z.string().min(1),
  numberIds: z.array(z.string().min(1)).min(1),
  count: z.int().positive(),
  from: z.int().min(0),
  to: z.int().positive(),
  now: z.int().positive(),
});
export type SeedChunk = z.infer<typeof SeedChunk>;

const SHAPES = ["sent", "delivered", "read", "failed", "failed-after-sent", "inbound"] as const;
export type Shape = (typeof SHAPES)[number];
export interface Seeded {
  id: string;
  status: MessageRow["status"];
  channelNumberId: string;
}
export interface SeedResult {
  shapes: Record<Shape, number>;
  /** The last TAIL records of the chunk (all of them when it is smaller), in the order written. */
  tail: Seeded[];
}

/**
 * The rows' mix, in 20ths: 16 outbound (10 sent, of them 4 delivered and 3 of those read; 1 failed
 * while processing; 1 failed after sent, reported by the operator), 4 inbound.
 */
function shapeOf(r: number): Shape {
  const k = r % 20;
  if (k >= 16) return "inbound";
  if (k === 14) return "failed";
  if (k === 15) return "failed-after-sent";
  if (k < 3) return "read";
  if (k < 4) return "delivered";
  return "sent";
}

/** A well-mixed 32-bit value of `i` and `salt`: the seed is the same for the same chunk, whoever runs it. */
function mix(i: number, salt: number): number {
  let h = Math.imul(i ^ salt, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  return (h ^ (h >>> 13)) >>> 0;
}

const TEMPLATES = [
  "Hello {n}, your order #{k} has shipped and should arrive within two business days. Track it any time in the app; reply STOP to opt out.",
  "Your verification code is {k}. It expires in 10 minutes. If you did not ask for it, ignore this message. Ref {n}.",
  "Reminder: your appointment with Dr. {n} is tomorrow at {h}:30. Reply 1 to confirm or 2 to reschedule. Address: 221B Baker Street.",
  "Hi {n}! Thanks for contacting support, ticket {k} is open and an agent will answer you shortly. Business hours: 8h to 20h.",
];
const NAMES = "Ana Bruno Carla Diego Elisa Fábio Gabriela Hugo Iara João Karina Lucas".split(" ");

/** A realistic body of exactly BODY_CHARS characters. */
function bodyOf(i: number): string {
  const t = TEMPLATES[i % TEMPLATES.length]!.replace("{n}", NAMES[i % NAMES.length]!)
    .replace("{k}", String(100000 + ((i * 7919) % 900000)))
    .replace("{h}", String(8 + (i % 10)));
  return `${t} ${"Visit example.com/help for more.".repeat(3)}`.slice(0, BODY_CHARS).padEnd(BODY_CHARS, ".");
}

/** An operator message id of the usual length ("wamid." and base64), unique per record. */
const wamidOf = (i: number): string => `wamid.HBgNNTUxMTk${String(i).padStart(12, "0")}FQIAEhggQjRBRjQ5MDhCQUU0`;

const QUEUED: LifecycleState = {
  status: "queued",
  upstream_message_id: null,
  processing_at: null,
  sent_at: null,
  failed_at: null,
  delivered_at: null,
  read_at: null,
  outcome_unknown_since: null,
  error_code: null,
  error_message: null,
  error_retriable: null,
  upstream_error_code: null,
  changes: null,
};

/** The reports a settled send of `shape` went through, each applied as production applies it. */
function reportsOf(shape: Shape, at: number, wamid: string): Omit<StatusUpdate, "jobId">[] {
  const processing = { at: at + 40, status: "processing" as const };
  if (shape === "failed") return [processing, { at: at + 400, status: "failed", error: permanentError("131009") }];
  const sent = { at: at + 350, status: "sent" as const, upstreamMessageId: wamid };
  if (shape === "failed-after-sent")
    return [processing, sent, { at: at + 1_400, status: "failed", error: permanentError("131026") }];
  const out: Omit<StatusUpdate, "jobId">[] = [processing, sent];
  if (shape === "delivered" || shape === "read") out.push({ at: at + 2_500, deliveredAt: at + 2_500 });
  if (shape === "read") out.push({ at: at + 60_000, readAt: at + 60_000 });
  return out;
}

/**
 * Writes records `from`…`to` of a seed of `count` into the object's slot tables, in one
 * transaction: outbound records as a text send inserts them, then settled by the transitions its
 * call and the operator's reports make (one claim, answered: off the number's work list), inbound
 * records as the operator's webhook inserts them. Nothing is queued, pending or in the rate window,
 * so the object sends nothing and refuses nothing because of them; counts are read from the
 * tables when asked (a fresh object has no tally covering them).
 */
export async function seedRecords(
  storage: DurableObjectStorage,
  tables: SlotTables,
  chunk: SeedChunk,
): Promise<SeedResult> {
  const { workspaceId, numberIds, count, from, to, now } = chunk;
  const newest = now - RATE_WINDOW_MARGIN_MS;
  const oldest = now - SEED_SPAN_MS;
  const step = (newest - oldest) / count;
  const shapes = Object.fromEntries(SHAPES.map((s) => [s, 0])) as Record<Shape, number>;
  const plan = Array.from({ length: Math.min(to, count) - from }, (_, k) => {
    const i = from + k;
    const at = Math.floor(oldest + i * step);
    const channelNumberId = numberIds[mix(i, 1) % numberIds.length]!;
    const counterpart = `55119${String(10_000_000 + ((i * 104_729) % 89_999_999)).padStart(8, "0")}`;
    return { i, at, channelNumberId, counterpart, shape: shapeOf(mix(i, 2)) };
  });
  // The fingerprint a send of this body stores (async: computed before the transaction).
  const fingerprints = await Promise.all(
    plan.map((p) =>
      sha256Hex(canonicalJson({ channelNumberId: p.channelNumberId, to: p.counterpart, text: { body: bodyOf(p.i) } })),
    ),
  );
  const tail: Seeded[] = [];
  storage.transactionSync(() => {
    plan.forEach((p, k) => {
      shapes[p.shape]++;
      const wamid = wamidOf(p.i);
      const { channelNumberId } = p;
      const message = { channelNumberId, type: "text", body: bodyOf(p.i), content: null, details: null, at: p.at };
      if (p.shape === "inbound") {
        // The operator's time (whole seconds) names the record; created_at is when it reached us.
        const operatorAt = Math.floor((p.at - 800) / 1000) * 1000;
        const id = inboundMessageId("bench", workspaceId, p.channelNumberId, wamid, operatorAt);
        const received = { from: p.counterpart, upstreamMessageId: wamid, receivedAt: operatorAt };
        insertInbound(tables, storage.sql, { id, ...message, ...received });
        tail.push({ id, status: "received", channelNumberId });
        return;
      }
      const id = newJobId(p.at);
      const key = { idemKey: crypto.randomUUID(), fingerprint: fingerprints[k]! };
      insertOutbound(tables, storage.sql, { id, ...message, to: p.counterpart, ...key });
      let state = QUEUED;
      let updatedAt = p.at;
      for (const report of reportsOf(p.shape, p.at, wamid)) {
        state = applyTransition(state, { jobId: id, ...report }).next;
        updatedAt = Math.max(updatedAt, report.at);
      }
      const settled = { pending: 0, attempts: 1, answered: 1, updated_at: updatedAt };
      updateRecord(tables, storage.sql, id, { ...state, ...settled } satisfies Partial<MessageRow>);
      tail.push({ id, status: state.status, channelNumberId });
    });
  });
  return { shapes, tail: tail.slice(-TAIL) };
}
