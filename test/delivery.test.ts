import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { createKey, createTenant, createWorkspace } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { accepted, connectCloudNumber, mockOperator, operatorError, operatorMessagesUrl, recordedEvents } from "./helpers/operator";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { SANDBOX_MAGIC_NUMBERS } from "../src/upstream/sandbox";
import { MAX_ATTEMPTS, UNKNOWN_OUTCOME_GRACE_MS } from "../src/durable-objects/channel-number";

// A clock far in the future: alarms then fire only when a test runs them, so
// every step of the drain is deterministic.
let clock = Date.UTC(2040, 0, 1);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 24 * 3_600_000);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

async function cloudTenant() {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const number = await connectCloudNumber(workspaceId);
  return { workspaceId, key, ...number };
}

const message = async (key: string, jobId: string) => json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));

/** Runs the number's alarm once (the drain step, then status and event flushing). */
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

describe("Cloud API delivery", () => {
  it("upstream 200 → sent, with the upstream id, our jobId as callback data and the number's token", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.OK1"));
    const jobId = await sendOne(t.key, t.numberId, "5511988887777", "Olá");
    expect(await drain(t.numberId)).toBe(true);

    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe(operatorMessagesUrl(t.phoneNumberId));
    expect(calls[0]!.auth).toBe(`Bearer ${t.token}`);
    expect(calls[0]!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "5511988887777",
      type: "text",
      text: { body: "Olá" },
      biz_opaque_callback_data: jobId,
    });
    expect(await message(t.key, jobId)).toMatchObject({
      status: "sent",
      upstreamMessageId: "wamid.OK1",
      processingAt: new Date(clock).toISOString(),
      sentAt: new Date(clock).toISOString(),
      error: null,
    });
    const events = await recordedEvents(workspaceStub(env, t.workspaceId), jobId);
    expect(events.map((e) => e.type === "message.status" && [e.data.previousStatus, e.data.status])).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    // The token never shows up in what we return.
    expect(JSON.stringify(await message(t.key, jobId))).not.toContain(t.token);
  });

  it("500 then 200 → retried after a delay, exactly one call succeeded, sent", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((_, i) => (i === 0 ? operatorError(500, 1, "internal") : accepted("wamid.OK2")));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing" });
    // Not before the backoff delay.
    setClock(clock + 500);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    setClock(clock + 1_000);
    await drain(t.numberId);
    expect(calls).toHaveLength(2);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.OK2" });
  });

  it("429 / 130429 throughput errors → paced retries, honouring Retry-After", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((_, i) =>
      i === 0
        ? new Response(JSON.stringify({ error: { code: 130429, message: "Rate limit hit" } }), { status: 400, headers: { "Retry-After": "3" } })
        : i === 1
          ? operatorError(429, 4, "Too many calls")
          : accepted("wamid.OK3"),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    setClock(clock + 2_999);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    setClock(clock + 1);
    await drain(t.numberId);
    expect(calls).toHaveLength(2);
    setClock(clock + 5_000);
    await drain(t.numberId);
    expect(calls).toHaveLength(3);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(3_000);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
  });

  it("131047 → failed at once with service_window_closed and the upstream code", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => operatorError(400, 131047, "Re-engagement message"));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    setClock(clock + 120_000);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      failedAt: expect.any(String),
      error: { code: "service_window_closed", upstreamCode: "131047", retriable: false, message: expect.stringMatching(/24 hours/) },
    });
  });

  it("a message that keeps getting 5xx fails after the bounded attempts with a clear reason", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => operatorError(503, 2, "Service unavailable"));
    const jobId = await sendOne(t.key, t.numberId);
    for (let i = 0; i < MAX_ATTEMPTS + 2; i++) {
      await drain(t.numberId);
      setClock(clock + 61_000);
    }
    expect(calls).toHaveLength(MAX_ATTEMPTS);
    expect(await message(t.key, jobId)).toMatchObject({ status: "failed", error: { code: "upstream_retries_exhausted", retriable: true } });
  });

  it("a timeout is never retried: the outcome stays unknown, then fails with upstream_outcome_unknown", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => {
      throw new DOMException("The operation timed out.", "TimeoutError");
    });
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    for (let i = 0; i < 5; i++) {
      setClock(clock + 60_000);
      await drain(t.numberId);
    }
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing" });
    setClock(clock + UNKNOWN_OUTCOME_GRACE_MS);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "failed", error: { code: "upstream_outcome_unknown" } });
  });

  it("10 queued messages leave in acceptance order and never faster than 2 per second", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const jobIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      jobIds.push(await sendOne(t.key, t.numberId, "5511999998888", `m${i}`));
      setClock(clock + 500);
    }
    // Drain as eagerly as possible: an alarm every 100 ms.
    for (let i = 0; i < 80 && calls.length < 10; i++) {
      await drain(t.numberId);
      setClock(clock + 100);
    }
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual(jobIds);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(500);
    for (const jobId of jobIds) expect((await message(t.key, jobId)).status).toBe("sent");
  });

  it("a crash while the upstream call is in flight never produces a second call for that message", async () => {
    const t = await cloudTenant();
    // The first call never answers, like a connection that hangs when the object dies.
    const calls = mockOperator((_, i) => (i === 0 ? new Promise<Response>(() => undefined) : accepted(`wamid.after-${i}`)));
    const jobId = await sendOne(t.key, t.numberId);
    void drain(t.numberId).catch(() => "aborted");
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    await abortAllDurableObjects(); // the object dies mid-call

    // The restarted object finds the entry mid-call and does not send it again.
    const second = await sendOne(t.key, t.numberId, "5511000000001", "next");
    for (let i = 0; i < 5; i++) {
      setClock(clock + 1_000);
      await drain(t.numberId);
    }
    expect(calls.filter((c) => c.body.biz_opaque_callback_data === jobId)).toHaveLength(1);
    expect(calls.filter((c) => c.body.biz_opaque_callback_data === second)).toHaveLength(1);
    const outbox = await channelNumberStub(env, t.numberId).outbox();
    expect(outbox.find((e) => e.jobId === jobId)?.state).toBe("unknown");
    expect((await message(t.key, jobId)).status).toBe("processing");
  });

  it("a number disconnected before its messages leave fails them with number_disconnected", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.never"));
    const jobId = await sendOne(t.key, t.numberId);
    const { admin } = await import("./helpers/http");
    await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" });
    await drain(t.numberId);
    expect(calls).toHaveLength(0);
    expect(await message(t.key, jobId)).toMatchObject({ status: "failed", error: { code: "number_disconnected" } });
  });
});

describe("sandbox delivery", () => {
  it("reports ordinary sends sent and each magic number's failure class", async () => {
    const t = await createTenant({ plan: "pro" });
    mockOperator(() => {
      throw new Error("the sandbox must not call the network");
    });
    const jobs: Record<string, string> = {};
    for (const to of ["5511999998888", ...Object.values(SANDBOX_MAGIC_NUMBERS)]) {
      jobs[to] = await sendOne(t.key, t.numberId, to);
      setClock(clock + 500);
    }
    for (let i = 0; i < 200; i++) {
      await drain(t.numberId);
      setClock(clock + 2_000);
    }
    setClock(clock + UNKNOWN_OUTCOME_GRACE_MS);
    await drain(t.numberId);
    const statusOf = async (to: string) => message(t.key, jobs[to]!);
    expect(await statusOf("5511999998888")).toMatchObject({ status: "sent", upstreamMessageId: `sandbox.${jobs["5511999998888"]}` });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.windowClosed)).toMatchObject({ status: "failed", error: { code: "service_window_closed" } });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.unreachable)).toMatchObject({ status: "failed", error: { code: "recipient_unreachable" } });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.retryThenSent)).toMatchObject({ status: "sent" });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.throttledThenSent)).toMatchObject({ status: "sent" });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.alwaysDown)).toMatchObject({ status: "failed", error: { code: "upstream_retries_exhausted" } });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.timeout)).toMatchObject({ status: "failed", error: { code: "upstream_outcome_unknown" } });
  });

  it("publishes each event to the webhook queue exactly once", async () => {
    const t = await createTenant();
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    const events = await recordedEvents(workspaceStub(env, t.workspaceId), jobId);
    expect(events).toHaveLength(2);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
    const unpublished = await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE published_at IS NULL").one().n,
    );
    expect(unpublished).toBe(0);
  });
});

describe("orphans and stranded messages", () => {
  it("an entry the workspace never recorded steps out of line, is never sent, and is dropped", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const stub = channelNumberStub(env, t.numberId);
    // What a send that died after its hand-off leaves behind.
    await stub.admit({ jobId: crypto.randomUUID(), workspaceId: t.workspaceId, channelNumberId: t.numberId, to: "5511999998888", body: "orphan", acceptedAt: clock });
    setClock(clock + 500);
    const real = await sendOne(t.key, t.numberId, "5511999998888", "real");
    for (let i = 0; i < 70; i++) {
      await drain(t.numberId);
      setClock(clock + 100);
    }
    expect(calls.map((c) => c.body.text.body)).toEqual(["real"]);
    expect((await message(t.key, real)).status).toBe("sent");
    setClock(clock + 60_000);
    await drain(t.numberId);
    expect((await stub.outbox()).map((e) => e.state)).toEqual(["dropped", "sent"]);
  });

  it("a client retry revives a set-aside entry under the same jobId and it is sent once", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.REVIVED"));
    const { deriveJobId } = await import("../src/domain/job-id");
    const jobId = await deriveJobId(env.JOB_ID_SECRET, t.workspaceId, "retry-me");
    const stub = channelNumberStub(env, t.numberId);
    await stub.admit({ jobId, workspaceId: t.workspaceId, channelNumberId: t.numberId, to: "5511999998888", body: "Hello", acceptedAt: clock });
    setClock(clock + 6_000);
    await drain(t.numberId);
    setClock(clock + 61_000);
    await drain(t.numberId);
    expect((await stub.outbox())[0]?.state).toBe("dropped");

    const retry = await send(t.key, "retry-me", textMessage(t.numberId));
    expect(await json(retry)).toEqual({ jobId, status: "created" });
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.REVIVED" });
  });

  it("a message recorded as queued but missing from its outbox is handed again by the workspace alarm", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.RESCUED"));
    const jobId = await sendOne(t.key, t.numberId);
    const stub = channelNumberStub(env, t.numberId);
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("DELETE FROM outbox");
    });
    setClock(clock + 2 * 60_000 + 1);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    expect(await stub.outboxJobIds()).toEqual([jobId]);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
  });
});

describe("object storage from an earlier release", () => {
  it("gains the columns added since, without losing its outbox", async () => {
    const t = await cloudTenant();
    const stub = channelNumberStub(env, t.numberId);
    const jobId = await sendOne(t.key, t.numberId);
    // Rebuild the outbox as the first release created it (without unknown_since).
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec(`
        CREATE TABLE outbox_v1 AS SELECT seq, job_id, workspace_id, channel_number_id, recipient, body, accepted_at, state,
          attempts, next_attempt_at, upstream_message_id, updated_at FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_v1 RENAME TO outbox;`);
    });
    await abortAllDurableObjects();
    const calls = mockOperator(() => accepted("wamid.UPGRADED"));
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
  });
});
