// The Worker as `npm run bench` runs it: production's handlers and objects, two of them subclassed with
// what only the bench calls (as test/worker.ts does for the tests), and routes under /bench/ to reach
// them. Never deployed; the class names are production's, so its bindings and migrations apply unchanged.
import { Hono } from "hono";
import { z } from "zod";
import worker from "../src/index";
import type { AppEnv } from "../src/context";
import { WorkspaceDurableObject as Workspace } from "../src/durable-objects/workspace/workspace";
import { ChannelNumberDurableObject as ChannelNumber } from "../src/durable-objects/channel-number/channel-number";
import { setMeta } from "../src/durable-objects/shared/meta";
import { newJobId } from "../src/lib/job-id";
import { canonicalJson } from "../src/domain/send-request";
import { now } from "../src/lib/clock";
import { sha256Hex } from "../src/lib/crypto";
import { adminAuth } from "../src/middleware/admin-auth";
import { apiKeyAuth } from "../src/middleware/api-key-auth";
import { requestId } from "../src/middleware/access-log";

export { MessageHistoryDurableObject, ThrottleDurableObject } from "../src/index";

export class WorkspaceDurableObject extends Workspace {
  /** The accept baseline's work in the object: one row written in a transaction, as a send's record is. */
  async acceptBaseline(id: string, fingerprint: string): Promise<void> {
    this.ctx.storage.transactionSync(() => setMeta(this.sql, "bench_accept", `${id} ${fingerprint}`));
  }
}

export class ChannelNumberDurableObject extends ChannelNumber {
  /** While held, the number accepts sends into its queue and calls no one: the delivery is measured apart. */
  private held = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const run = this.drain.run.bind(this.drain);
    this.drain.run = () => (this.held ? Promise.resolve() : run());
  }

  async benchHold(held: boolean): Promise<void> {
    this.held = held;
    // Released: the alarm runs the drain now, as after any wait.
    if (!held) await this.ctx.storage.setAlarm(now());
  }

  override async alarm(): Promise<void> {
    if (this.held) return this.ctx.storage.setAlarm(now() + 60_000);
    return super.alarm();
  }
}

const Hold = z.strictObject({ numberIds: z.array(z.string().min(1)).min(1), held: z.boolean() });

const workspaceOf = (env: Env, workspaceId: string) => {
  const ns = env.WORKSPACE as unknown as DurableObjectNamespace<WorkspaceDurableObject>;
  return ns.get(ns.idFromName(workspaceId));
};
const numberOf = (env: Env, numberId: string) => {
  const ns = env.CHANNEL_NUMBER as unknown as DurableObjectNamespace<ChannelNumberDurableObject>;
  return ns.get(ns.idFromName(numberId));
};

const bench = new Hono<AppEnv>();
bench.use("*", requestId);

/** Holds or releases the named numbers' delivery. */
bench.post("/bench/hold", adminAuth, async (c) => {
  const hold = Hold.safeParse(await c.req.json().catch(() => null));
  if (!hold.success) return c.json({ error: hold.error.message }, 400);
  await Promise.all(hold.data.numberIds.map((id) => numberOf(c.env, id).benchHold(hold.data.held)));
  return c.body(null, 204);
});

/**
 * The accept path's baseline: what a send does minus its rules. The same API-key authentication,
 * a JSON body and its SHA-256 fingerprint, a new job id, one hop to the workspace object and one
 * row written there in a transaction, then 201 with the id. A send adds the idempotency lookup,
 * both rate windows, the hop to its number object and the record's insert with its index entries.
 */
bench.post("/bench/accept-baseline", apiKeyAuth, async (c) => {
  const body: unknown = await c.req.json();
  const fingerprint = await sha256Hex(canonicalJson(body));
  const jobId = newJobId(now());
  await workspaceOf(c.env, c.get("principal").workspaceId).acceptBaseline(jobId, fingerprint);
  return c.json({ jobId, status: "created" }, 201);
});

export default {
  ...worker,
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname.startsWith("/bench/")) return bench.fetch(request, env, ctx);
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env, unknown>;
