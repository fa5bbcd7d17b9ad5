import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import {
  accepted,
  liveNumberTenant,
  mockOperator,
  operatorError,
  operatorMessagesUrl,
  type OperatorCall,
} from "../helpers/operator";
import { holdObject, testNumber, testWorkspace } from "../helpers/objects";
import { liveNumberOnEdge, mockEdge } from "../helpers/number-edge";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { SANDBOX_MAGIC_NUMBERS, SANDBOX_REPORT_DELAY_MS } from "../../src/operator/sandbox";
import {
  PACE_SPACING_MS,
  PACE_WINDOW_MS,
  RETRY_POLICY,
  UNKNOWN_OUTCOME_WINDOW_MS,
} from "../../src/durable-objects/channel-number/delivery-policy";
import { newJobId } from "../../src/lib/job-id";
import { slotOf, slotTable } from "../../src/durable-objects/workspace/day-tables";
import { fakeClockPerTest } from "../helpers/clock";

// A clock far in the future: alarms then fire only when a test runs them, so
// every step of the drain is deterministic.
const clock = fakeClockPerTest(Date.UTC(2040, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

const message = async (key: string, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));

/** Runs the number's alarm once (due steps: the drain, relaying changes, timed reports). */
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));

/** Runs the alarm `rounds` times, moving the clock by `stepMs` after each. */
async function drainFor(numberId: string, rounds: number, stepMs = PACE_WINDOW_MS): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await drain(numberId);
    clock.advance(stepMs);
  }
}

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const callsFor = (calls: OperatorCall[], jobId: string) =>
  calls.filter((c) => c.body.biz_opaque_callback_data === jobId);

/** The largest number of call starts inside any window of `windowMs` (half-open). */
function maxCallsInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    max = Math.max(max, j - i);
  }
  return max;
}

/** The operator's status webhook, signed as the operator signs it. */
async function operatorStatus(phoneNumberId: string, status: Record<string, unknown>): Promise<void> {
  const { call } = await import("../helpers/http");
  const { hmacSha256, toHex } = await import("../../src/lib/crypto");
  const raw = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "WABA",
        changes: [{ field: "messages", value: { metadata: { phone_number_id: phoneNumberId }, statuses: [status] } }],
      },
    ],
  });
  const res = await call("/upstream/cloud/webhook", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "X-Hub-Signature-256": `sha256=${toHex(await hmacSha256(env.UPSTREAM_APP_SECRET, raw))}`,
    },
    body: raw,
  });
  expect(res.status).toBe(200);
}

/** The operator's status report of one of our messages, through its webhook (applied before the route answers). */
const report = (
  phoneNumberId: string,
  s: { jobId: string; upstreamMessageId: string; status: "sent" | "delivered" | "read" | "failed"; errorCode?: string },
) =>
  operatorStatus(phoneNumberId, {
    id: s.upstreamMessageId,
    status: s.status,
    timestamp: String(Math.floor(clock.now() / 1000)),
    recipient_id: "5511999998888",
    biz_opaque_callback_data: s.jobId,
    ...(s.errorCode ? { errors: [{ code: Number(s.errorCode), title: "error", message: "error" }] } : {}),
  });

/** The number's queue (what it still has to call), oldest first. */
const queuedIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

describe("Live number delivery", () => {
  it("operator 200 → sent, with the operator's id, our jobId as callback data, '+' and the number's token", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.OK1"));
    const calls = t.calls;
    const jobId = await sendOne(t.key, t.numberId, "5511988887777", "Olá");
    expect(await drain(t.numberId)).toBe(true);

    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe(operatorMessagesUrl(t.phoneNumberId));
    expect(calls[0]!.auth).toBe(`Bearer ${t.token}`);
    expect(calls[0]!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "+5511988887777",
      type: "text",
      text: { body: "Olá" },
      biz_opaque_callback_data: jobId,
    });
    expect(await message(t.key, jobId)).toMatchObject({
      status: "sent",
      upstreamMessageId: "wamid.OK1",
      processingAt: new Date(clock.now()).toISOString(),
      sentAt: new Date(clock.now()).toISOString(),
      error: null,
    });
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    expect(JSON.stringify(await message(t.key, jobId))).not.toContain(t.token);
    expect(JSON.stringify(t.hook.events())).not.toContain(t.token);
  });

  it("an operator error object with a 'try again' code → retried after a delay, exactly one call succeeded, sent", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((_, i) =>
      i === 0 ? operatorError(500, 131016, "Service unavailable") : accepted("wamid.OK2"),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing" });
    clock.advance(500);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    clock.advance(RETRY_POLICY.delaysMs[0]);
    await drain(t.numberId);
    expect(calls).toHaveLength(2);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.OK2" });
  });

  it("429 without a code, and 130429 with Retry-After: retried, honouring Retry-After; the whole number waits", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((_, i) =>
      i === 0
        ? new Response("Too Many Requests", { status: 429, headers: { "Retry-After": "90" } })
        : i === 1
          ? new Response(JSON.stringify({ error: { code: 130429, message: "Rate limit hit" } }), {
              status: 400,
              headers: { "Retry-After": "70" },
            })
          : accepted(`wamid.OK${i}`),
    );
    const a = await sendOne(t.key, t.numberId, "5511000000001");
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    // A message to another recipient waits too: the operator throttles the whole number.
    const b = await sendOne(t.key, t.numberId, "5511000000002");
    clock.advance(89_999);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    clock.advance(1);
    await drain(t.numberId);
    expect(calls).toHaveLength(2); // one call only: its 130429 holds the number again, for 70 s
    clock.advance(69_999);
    await drain(t.numberId);
    expect(calls).toHaveLength(2);
    clock.advance(1);
    await drainFor(t.numberId, 3);
    expect(calls).toHaveLength(4);
    expect(calls[1]!.at - calls[0]!.at).toBe(90_000);
    expect(calls[2]!.at - calls[1]!.at).toBe(70_000);
    expect(await message(t.key, a)).toMatchObject({ status: "sent" });
    expect(await message(t.key, b)).toMatchObject({ status: "sent" });
  });

  it("131047 → failed at once with service_window_closed and the operator's code", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => operatorError(400, 131047, "Re-engagement message"));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    clock.advance(120_000);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      failedAt: expect.any(String),
      error: {
        code: "service_window_closed",
        upstreamCode: "131047",
        retriable: false,
        message: expect.stringMatching(/24 hours/),
      },
    });
  });

  it("a message that keeps getting 'try again' fails after the bounded attempts with a clear reason", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => operatorError(503, 2, "Service temporarily unavailable"));
    const jobId = await sendOne(t.key, t.numberId);
    await drainFor(t.numberId, RETRY_POLICY.maxAttempts + 2, 61_000);
    expect(calls).toHaveLength(RETRY_POLICY.maxAttempts);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_retries_exhausted", retriable: true },
    });
  });

  it("10 messages to one recipient leave in acceptance order; no window of the number's second ever sees more than 2 calls", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const jobIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      jobIds.push(await sendOne(t.key, t.numberId, "5511999998888", `m${i}`));
      clock.advance(500);
    }
    // Drain as eagerly as possible: an alarm every 100 ms.
    for (let i = 0; i < 80 && calls.length < 10; i++) {
      await drain(t.numberId);
      clock.advance(100);
    }
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual(jobIds);
    expect(
      maxCallsInWindow(
        calls.map((c) => c.at),
        1_000,
      ),
    ).toBeLessThanOrEqual(2);
    for (const jobId of jobIds) expect((await message(t.key, jobId)).status).toBe("sent");
  });

  it("a crash while the call to the operator is in flight never produces a second call for that message", async () => {
    const t = await liveNumberTenant();
    // The first call never answers, like a connection that hangs when the object dies.
    const calls = mockOperator((_, i) =>
      i === 0 ? new Promise<Response>(() => undefined) : accepted(`wamid.after-${i}`),
    );
    const jobId = await sendOne(t.key, t.numberId);
    void drain(t.numberId).catch(() => "aborted");
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    await abortAllDurableObjects(); // the object dies mid-call

    // The restarted object rebuilds its queue at the next send and does not send that message again.
    const second = await sendOne(t.key, t.numberId, "5511000000001", "next");
    await drainFor(t.numberId, 5);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(callsFor(calls, second)).toHaveLength(1);
    // Rebuilt from the records, its queue found the claim granted and never answered: unknown, not queued.
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "processing",
      outcomeUnknownSince: expect.any(String),
    });
    expect(await message(t.key, second)).toMatchObject({ status: "sent" });
  });

  it("an answer the workspace could not take is kept and handed again: the record learns it once, announced once", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.KEPT"));
    const jobId = await sendOne(t.key, t.numberId);
    const workspace = testWorkspace(t.workspaceId);
    // The workspace cannot write a `sent` record for now (an I/O fault): the claim goes through, the answer does not.
    await workspace.failWrites(slotTable(slotOf(clock.now())), { updatesTo: "sent" });
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*disk I\/O error \(injected\)/);
    await drain(t.numberId);
    expect(await trace.seen()).not.toHaveLength(0);
    await trace.end();
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing", outcomeUnknownSince: null });

    // The fault passes; the number hands the answer again at its next try (its alarm is armed for it).
    await workspace.repairWrites();
    clock.advance(1_000);
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.KEPT" });
    // Once: more alarms change nothing, call nothing, announce nothing more.
    await drainFor(t.numberId, 3, 61_000);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
  });

  it("a number disconnected before its messages leave fails them with number_disconnected", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => accepted("wamid.never"));
    const jobId = await sendOne(t.key, t.numberId);
    await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" });
    await drain(t.numberId);
    expect(calls).toHaveLength(0);
    expect(await message(t.key, jobId)).toMatchObject({ status: "failed", error: { code: "number_disconnected" } });
  });
});

describe("calls that may have reached the operator are never sent again", () => {
  const ambiguous: [string, () => Response | Promise<Response>][] = [
    [
      "the connection is lost (or refused: the runtime reports both alike)",
      () => Promise.reject(new TypeError("Network connection lost.")),
    ],
    ["the call times out", () => Promise.reject(new DOMException("The operation timed out.", "TimeoutError"))],
    [
      "a gateway answers 504 without the operator's error object",
      () => new Response("gateway timeout", { status: 504 }),
    ],
    [
      "a 502 with an HTML page",
      () => new Response("<html>Bad gateway</html>", { status: 502, headers: { "content-type": "text/html" } }),
    ],
    ["a 500 with an empty body", () => new Response(null, { status: 500 })],
    ["a 2xx without a message id", () => Response.json({ messaging_product: "whatsapp" })],
    [
      "a 2xx whose body is cut off",
      () => new Response('{"messages":[{"id":"wam', { status: 200, headers: { "content-type": "application/json" } }),
    ],
  ];
  for (const [what, reply] of ambiguous) {
    it(`${what}: the outcome is unknown, one call only, and the operator's status settles it`, async () => {
      const t = await liveNumberTenant();
      const calls = mockOperator((_, i) => (i === 0 ? reply() : accepted(`wamid.second-${i}`)));
      const jobId = await sendOne(t.key, t.numberId);
      await drainFor(t.numberId, 3, 61_000);
      expect(calls).toHaveLength(1);
      expect(await message(t.key, jobId)).toMatchObject({
        status: "processing",
        outcomeUnknownSince: expect.any(String),
      });
      // The operator's webhook tells us it got it after all.
      await operatorStatus(t.phoneNumberId, {
        id: "wamid.LATE",
        status: "sent",
        timestamp: String(Math.floor(clock.now() / 1000)),
        recipient_id: "5511999998888",
        biz_opaque_callback_data: jobId,
      });
      // The operator queue's consumer applies it: wait for that positive signal.
      await vi.waitFor(
        async () =>
          expect(await message(t.key, jobId)).toMatchObject({
            status: "sent",
            upstreamMessageId: "wamid.LATE",
            outcomeUnknownSince: null,
          }),
        {
          timeout: 10_000,
          interval: 50,
        },
      );
      await drainFor(t.numberId, 2, 61_000);
      expect(calls).toHaveLength(1);
    });
  }

  it("an unknown outcome stays open for the operator's 7-day webhook window, then fails with upstream_outcome_unknown", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => Promise.reject(new TypeError("Network connection lost.")));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    const workspace = workspaceStub(env, t.workspaceId);
    clock.advance(UNKNOWN_OUTCOME_WINDOW_MS - 1);
    await drain(t.numberId);
    await runDurableObjectAlarm(workspace);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "processing",
      outcomeUnknownSince: expect.any(String),
    });
    clock.advance(1);
    await drain(t.numberId);
    await runDurableObjectAlarm(workspace);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_outcome_unknown", retriable: true },
    });
  });

  it("UNKNOWN_OUTCOME_WINDOW_MS shortens that window (local soak runs): the message fails when it ends, never called again", async () => {
    const vars = env as { UNKNOWN_OUTCOME_WINDOW_MS: string };
    const before = vars.UNKNOWN_OUTCOME_WINDOW_MS;
    vars.UNKNOWN_OUTCOME_WINDOW_MS = "60000";
    try {
      // A workspace object created now reads the var in its constructor.
      const t = await liveNumberTenant();
      const calls = mockOperator(() => Promise.reject(new TypeError("Network connection lost.")));
      const jobId = await sendOne(t.key, t.numberId);
      await drain(t.numberId);
      const workspace = workspaceStub(env, t.workspaceId);
      clock.advance(59_999);
      await drain(t.numberId);
      await runDurableObjectAlarm(workspace);
      expect(await message(t.key, jobId)).toMatchObject({
        status: "processing",
        outcomeUnknownSince: expect.any(String),
      });
      clock.advance(1);
      await drain(t.numberId);
      await runDurableObjectAlarm(workspace);
      expect(calls).toHaveLength(1);
      expect(await message(t.key, jobId)).toMatchObject({
        status: "failed",
        error: { code: "upstream_outcome_unknown", retriable: true },
      });
    } finally {
      vars.UNKNOWN_OUTCOME_WINDOW_MS = before;
    }
  });

  it("an operator 'sent' that arrives while the message waits on a retry stops the retry", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => operatorError(500, 131000, "Something went wrong"));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    await report(t.phoneNumberId, { jobId, upstreamMessageId: "wamid.PROCESSED", status: "sent" });
    await drainFor(t.numberId, 4, 61_000);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.PROCESSED" });
  });
});

describe("one message never holds up its number", () => {
  it("a recipient in a long back-off never holds messages to other recipients; its own later messages wait in order", async () => {
    const t = await liveNumberTenant();
    let slowCalls = 0;
    const calls = mockOperator((c) =>
      c.body.to === "+5511000000001" && ++slowCalls === 1
        ? new Response(JSON.stringify({ error: { code: 131056, message: "Pair rate limit hit" } }), {
            status: 400,
            headers: { "Retry-After": "86400" },
          })
        : accepted(`wamid.${c.body.text.body}`),
    );
    const slow1 = await sendOne(t.key, t.numberId, "5511000000001", "slow-1");
    const slow2 = await sendOne(t.key, t.numberId, "5511000000001", "slow-2");
    clock.advance(1_000);
    const other = await sendOne(t.key, t.numberId, "5511000000002", "other");
    await drainFor(t.numberId, 4);
    // The other recipient's message went out; the slow conversation waits, in order.
    expect(calls.map((c) => c.body.text.body)).toEqual(["slow-1", "other"]);
    expect(await message(t.key, other)).toMatchObject({ status: "sent" });
    expect(await message(t.key, slow2)).toMatchObject({ status: "queued" });
    // Retry-After: 86400 is capped: the retry comes within the cap, then its conversation continues.
    clock.advance(RETRY_POLICY.maxDelayMs);
    await drainFor(t.numberId, 4);
    expect(calls.map((c) => c.body.text.body)).toEqual(["slow-1", "other", "slow-1", "slow-2"]);
    expect(await message(t.key, slow1)).toMatchObject({ status: "sent" });
    expect(await message(t.key, slow2)).toMatchObject({ status: "sent" });
  });

  it("retries stop within the documented budget of attempts and time", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(
      () =>
        new Response(JSON.stringify({ error: { code: 131016, message: "busy" } }), {
          status: 503,
          headers: { "Retry-After": "3600" },
        }),
    );
    const jobId = await sendOne(t.key, t.numberId);
    const started = clock.now();
    await drainFor(t.numberId, 10, RETRY_POLICY.maxDelayMs);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_retries_exhausted" },
    });
    expect(calls.length).toBeLessThanOrEqual(RETRY_POLICY.maxAttempts);
    expect(calls.at(-1)!.at - started).toBeLessThanOrEqual(RETRY_POLICY.budgetMs);
  });

  it("the sandbox's always-failing number never holds later ordinary sends", async () => {
    const t = await createTenant({ plan: "pro" });
    mockOperator(() => {
      throw new Error("the sandbox must not call the network");
    });
    const down = await sendOne(t.key, t.numberId, SANDBOX_MAGIC_NUMBERS.alwaysDown);
    clock.advance(500);
    const ordinary = await sendOne(t.key, t.numberId, "5511999998888");
    await drainFor(t.numberId, 3);
    expect(await message(t.key, ordinary)).toMatchObject({ status: "sent" });
    expect(await message(t.key, down)).toMatchObject({ status: "processing" });
  });
});

describe("the pace holds at the operator", () => {
  it("the call's start time is taken when the request leaves, not before the claim: a slow claim never lets 3 calls into a second", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    for (let i = 0; i < 3; i++) {
      await sendOne(t.key, t.numberId, `55110000000${i}`, `m${i}`);
      clock.advance(500);
    }
    clock.advance(1_000);
    const t0 = clock.now();
    // The first claim takes 400 ms (the workspace object is busy): its call leaves at t0 + 400.
    const gate = await holdObject(workspaceStub(env, t.workspaceId));
    const alarm = drain(t.numberId);
    await new Promise((r) => setTimeout(r, 20));
    clock.advance(400);
    await gate.release();
    await alarm;
    expect(calls.map((c) => c.at)).toEqual([t0 + 400]);
    // A pace counted from before the claim would allow the next call at t0 + 505 and a third at t0 + 1010.
    clock.set(t0 + PACE_SPACING_MS);
    await drain(t.numberId);
    for (let i = 0; i < 20 && calls.length < 3; i++) {
      clock.advance(100);
      await drain(t.numberId);
    }
    expect(calls).toHaveLength(3);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(PACE_SPACING_MS);
    expect(
      maxCallsInWindow(
        calls.map((c) => c.at),
        1_000,
      ),
    ).toBeLessThanOrEqual(2);
    expect(await testNumber(t.numberId).recentCalls()).toEqual(calls.slice(-2).map((c) => c.at));
  });
});

describe("the lifecycle follows the operator", () => {
  it("an operator failure after sent moves the message to failed, with the error and a message.status event", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.F1"));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    clock.advance(2_000);
    await report(t.phoneNumberId, { jobId, upstreamMessageId: "wamid.F1", status: "failed", errorCode: "131026" });
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      sentAt: expect.any(String),
      error: { code: "recipient_unreachable", upstreamCode: "131026" },
    });
    expect((await t.hook.waitForStatus(jobId, "failed")).data).toMatchObject({
      previousStatus: "sent",
      error: { code: "recipient_unreachable", upstreamCode: "131026" },
    });
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
      ["sent", "failed"],
    ]);
  });

  it("earlier statuses sent to a settled message change nothing and announce nothing", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.S1"));
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    await report(t.phoneNumberId, { jobId, upstreamMessageId: "wamid.S1", status: "failed", errorCode: "131047" });
    await t.hook.waitForStatus(jobId, "failed");
    await t.hook.settled();
    const before = await message(t.key, jobId);
    const eventsBefore = t.hook.events().filter((e) => e.data.messageId === jobId);
    expect(eventsBefore).toHaveLength(3);
    await workspaceStub(env, t.workspaceId).applyStatuses([
      { jobId, at: clock.now() + 1, status: "processing" },
      { jobId, at: clock.now() + 2, status: "sent", upstreamMessageId: "wamid.OTHER" },
    ]);
    await report(t.phoneNumberId, { jobId, upstreamMessageId: "wamid.S1", status: "sent" });
    // (A delivery reported after the failure is recorded: another of the user's devices, operator/late-reports.test.ts.)
    expect(await message(t.key, jobId)).toEqual(before);
    // Positive signal first: everything published until now was delivered.
    await t.hook.settled();
    expect(t.hook.events().filter((e) => e.data.messageId === jobId)).toEqual(eventsBefore);
  });
});

describe("sandbox delivery", () => {
  it("reports ordinary sends sent and each magic number's behaviour, failures after acceptance by its simulated webhook", async () => {
    const t = await createTenant({ plan: "pro" });
    mockOperator(() => {
      throw new Error("the sandbox must not call the network");
    });
    const jobs: Record<string, string> = {};
    for (const to of ["5511999998888", ...Object.values(SANDBOX_MAGIC_NUMBERS)]) {
      jobs[to] = await sendOne(t.key, t.numberId, to);
      clock.advance(500);
    }
    await drainFor(t.numberId, 10);
    const statusOf = async (to: string) => message(t.key, jobs[to]!);
    // Accepted at first, like the operator; its webhook reports the failure a second later.
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.windowClosed)).toMatchObject({
      status: "failed",
      sentAt: expect.any(String),
      error: { code: "service_window_closed" },
    });
    await drainFor(t.numberId, 200, 2_000);
    clock.advance(SANDBOX_REPORT_DELAY_MS.unknownSettled);
    await drainFor(t.numberId, 3);
    expect(await statusOf("5511999998888")).toMatchObject({
      status: "sent",
      upstreamMessageId: `sandbox.${jobs["5511999998888"]}`,
    });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.unreachable)).toMatchObject({
      status: "failed",
      error: { code: "recipient_unreachable" },
    });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.retryThenSent)).toMatchObject({ status: "sent" });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.throttledThenSent)).toMatchObject({ status: "sent" });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.alwaysDown)).toMatchObject({
      status: "failed",
      error: { code: "upstream_retries_exhausted" },
    });
    expect(await statusOf(SANDBOX_MAGIC_NUMBERS.timeout)).toMatchObject({ status: "sent", outcomeUnknownSince: null });
  });

  it("publishes each event to the webhook queue exactly once", async () => {
    const edge = mockEdge(() => {
      throw new Error("the sandbox must not call the network");
    });
    const t = await createTenant();
    const hook = await edge.webhook(t.key, t.numberId);
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await hook.waitForStatus(jobId, "sent");
    await hook.settled();
    const events = hook.events().filter((e) => e.data.messageId === jobId);
    expect(events.map((e) => [e.data.previousStatus, e.data.status])).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
    expect(edge.calls).toHaveLength(0);
    expect(edge.net.unhandled).toEqual([]);
  });
});

describe("orphans and stranded messages", () => {
  it("an entry the workspace never recorded is never sent and is dropped at its claim; the line behind it moves on", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    // What a send that died after its hand-off leaves behind.
    const orphan = newJobId(clock.now());
    await testNumber(t.numberId).admit({
      jobId: orphan,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      acceptedAt: clock.now(),
    });
    clock.advance(500);
    const real = await sendOne(t.key, t.numberId, "5511999998888", "real");
    expect(await queuedIds(t.numberId)).toEqual([orphan, real]);
    await drainFor(t.numberId, 3, 100);
    expect(calls.map((c) => c.body.text.body)).toEqual(["real"]);
    expect((await message(t.key, real)).status).toBe("sent");
    expect(await queuedIds(t.numberId)).toEqual([]);
  });

  it("a message recorded as queued but missing from its number's queue (the number restarted) is reloaded and sent", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => accepted("wamid.RESCUED"));
    const jobId = await sendOne(t.key, t.numberId);
    await evictDurableObject(channelNumberStub(env, t.numberId));
    // The queue is rebuilt at the first alarm; the first call waits a pace window (the restarted
    // instance counts the calls an earlier one may have made in the last second).
    await drainFor(t.numberId, 2);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.RESCUED" });
  });
});
