import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, expectError, json } from "../helpers/http";
import { answerAtEdge } from "../helpers/edge";
import { liveNumberTenant } from "../helpers/operator";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { queuedEvents } from "../helpers/events";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { testWorkspace } from "../helpers/objects";

// The local soak's development-only switches (bench/soak.md): restarting the objects alone, and
// hearing which events the queue accepted. Off in wrangler.toml (the suite's vars and production's).

afterEach(() => {
  vi.restoreAllMocks();
});

type Vars = { DEV_OBJECT_RESTARTS: string; DEV_EVENT_TAP_URL: string };
const vars = env as unknown as Vars;

/** Runs `fn` with the vars changed, then puts them back. */
async function withVars(changed: Partial<Vars>, fn: () => Promise<void>): Promise<void> {
  const before = { ...vars };
  Object.assign(vars, changed);
  try {
    await fn();
  } finally {
    Object.assign(vars, before);
  }
}

/** The instance an object runs as now: the same one until it restarts. */
const instanceOf = (stub: DurableObjectStub) => runInDurableObject(stub, (instance: object) => instance);

const restart = (body: unknown) => admin("/dev/object-restarts", { method: "POST", json: body });

describe("POST /admin/v1/dev/object-restarts", () => {
  it("is not there with production's vars: 404 like any unknown route, and no object restarts, even asked directly", async () => {
    expect(vars.DEV_OBJECT_RESTARTS).toBe("false");
    const t = await liveNumberTenant();
    const workspace = workspaceStub(env, t.workspaceId);
    const number = channelNumberStub(env, t.numberId);
    const before = [await instanceOf(workspace), await instanceOf(number)];
    await expectError(
      await restart({ workspaceIds: [t.workspaceId], channelNumberIds: [t.numberId] }),
      404,
      "not_found",
    );
    await expectError(await restart("not even a body"), 404, "not_found");
    const trace = await expectRuntimeLog(/object restarts are off \(DEV_OBJECT_RESTARTS\)/);
    // Both refusals are handled as they are made: a second call's rejection left unobserved while the
    // first is awaited would surface as an unhandled rejection.
    const outcomes = await Promise.all(
      [workspace.restartForSoak(), number.restartForSoak()].map((call) =>
        call.then(
          () => "restarted",
          (err: unknown) => String(err),
        ),
      ),
    );
    for (const outcome of outcomes) expect(outcome).toMatch(/object restarts are off/);
    await trace.seen(2);
    await trace.end();
    expect((await instanceOf(workspace)) === before[0] && (await instanceOf(number)) === before[1]).toBe(true);
  });

  it('with DEV_OBJECT_RESTARTS "true": the named objects start again on their storage; the admin token is still required', async () => {
    await withVars({ DEV_OBJECT_RESTARTS: "true" }, async () => {
      const t = await liveNumberTenant();
      const workspace = workspaceStub(env, t.workspaceId);
      const number = channelNumberStub(env, t.numberId);
      const before = [await instanceOf(workspace), await instanceOf(number)];
      const refused = await admin("/dev/object-restarts", {
        method: "POST",
        json: { workspaceIds: [t.workspaceId] },
        headers: { Authorization: "Bearer wrong" },
      });
      expect(refused.status).toBe(401);
      await expectError(await restart({ workspaceIds: ["not-an-id"] }), 400, "invalid_request");
      expect((await instanceOf(workspace)) === before[0]).toBe(true);

      const trace = await expectRuntimeLog(/restarted on purpose \(DEV_OBJECT_RESTARTS\)/);
      const res = await restart({ workspaceIds: [t.workspaceId], channelNumberIds: [t.numberId] });
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({ restarted: 2 });
      await trace.end();
      // A stub whose object restarted is spent (the platform's rule): new ones reach the new instances.
      expect((await instanceOf(workspaceStub(env, t.workspaceId))) === before[0]).toBe(false);
      expect((await instanceOf(channelNumberStub(env, t.numberId))) === before[1]).toBe(false);
      // On the storage they had: the workspace lists its messages, the number answers for its state.
      expect((await api("/messages", t.key)).status).toBe(200);
      expect(await channelNumberStub(env, t.numberId).sendingState()).toEqual({ paused: null });
    });
  });
});

describe("DEV_EVENT_TAP_URL", () => {
  it("is told the ids of the events each queue send carried, once the queue accepted it (an inbound message's operator id too)", async () => {
    const tap = "http://127.0.0.1:8923/tap";
    await withVars({ DEV_EVENT_TAP_URL: tap }, async () => {
      // A workspace object created now reads the var in its constructor.
      const t = await liveNumberTenant();
      const told: unknown[] = [];
      answerAtEdge(async (input, init) => {
        const req = new Request(input as RequestInfo, init);
        if (req.url !== tap) return undefined;
        told.push(...((await req.json()) as unknown[]));
        return new Response(null, { status: 204 });
      });
      const queued = queuedEvents();
      const message = {
        from: "5511912345678",
        id: "wamid.TAP1",
        timestamp: seconds(Date.now()),
        type: "text",
        text: { body: "Oi" },
      };
      expect((await postOperator(inboundPayload(t.phoneNumberId, [message]))).status).toBe(200);
      await vi.waitFor(() => expect(queued().filter((e) => e.type === "message.received")).toHaveLength(1));
      const [event] = queued().filter((e) => e.type === "message.received");
      await vi.waitFor(() => expect(told).toEqual([{ id: event!.id, upstreamMessageId: "wamid.TAP1" }]));
    });
  });

  it("is heard before the publisher settles its owed list: an event no longer owed was told (a kill in between leaves it owed)", async () => {
    const tap = "http://127.0.0.1:8923/tap";
    await withVars({ DEV_EVENT_TAP_URL: tap }, async () => {
      const t = await liveNumberTenant();
      let release!: () => void;
      const answered = new Promise<void>((resolve) => (release = resolve));
      let heard = 0;
      answerAtEdge(async (input, init) => {
        const req = new Request(input as RequestInfo, init);
        if (req.url !== tap) return undefined;
        heard++;
        await answered;
        return new Response(null, { status: 204 });
      });
      const queued = queuedEvents();
      const message = {
        from: "5511912345678",
        id: "wamid.TAP2",
        timestamp: seconds(Date.now()),
        type: "text",
        text: { body: "Oi" },
      };
      expect((await postOperator(inboundPayload(t.phoneNumberId, [message]))).status).toBe(200);
      await vi.waitFor(() => expect(queued().filter((e) => e.type === "message.received")).toHaveLength(1));
      await vi.waitFor(() => expect(heard).toBe(1));
      // The queue took it; the tap has not answered: the obligation stays.
      expect(await testWorkspace(t.workspaceId).owedEvents()).toHaveLength(1);
      release();
      await vi.waitFor(async () => expect(await testWorkspace(t.workspaceId).owedEvents()).toEqual([]));
    });
  });
});
