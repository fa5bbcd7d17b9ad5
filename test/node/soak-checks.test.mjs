import { describe, expect, it } from "vitest";
import {
  checkClientErrors,
  checkConversationOrder,
  checkEvents,
  checkOperatorCalls,
  checkTerminal,
  queuedTimes,
} from "../../scripts/lib/soak-checks.mjs";

/** @typedef {import("../../scripts/lib/soak-checks.mjs").AcceptedSend} AcceptedSend */
/** @typedef {import("../../scripts/lib/soak-checks.mjs").OperatorCall} OperatorCall */
/** @typedef {import("../../scripts/lib/soak-checks.mjs").MessageRecord} MessageRecord */

/** @param {string} jobId @param {Partial<AcceptedSend>} [over] @returns {AcceptedSend} */
const send = (jobId, over = {}) => ({
  jobId,
  numberId: "n1",
  phoneNumberId: "p1",
  to: "5511999",
  text: `hi ${jobId}`,
  acceptedAt: 1_000,
  firstTriedAt: 990,
  ...over,
});

/** @param {AcceptedSend} s @param {Partial<MessageRecord>} [over] @returns {[string, MessageRecord]} */
const record = (s, over = {}) => [
  s.jobId,
  { status: "sent", to: s.to, text: { body: s.text }, channelNumberId: s.numberId, ...over },
];

let seq = 0;
/** @param {AcceptedSend} s @param {Partial<OperatorCall>} [over] @returns {OperatorCall} */
const call = (s, over = {}) => ({
  seq: seq++,
  at: 2_000,
  hr: 2_000,
  startedAt: 1_990,
  phoneNumberId: s.phoneNumberId,
  jobId: s.jobId,
  attempt: 1,
  to: `+${s.to}`,
  text: s.text,
  messagingProduct: "whatsapp",
  answer: "accepted",
  httpStatus: 200,
  code: null,
  processed: true,
  answeredHr: 2_100,
  ...over,
});

describe("checkTerminal", () => {
  it("counts terminal sends and fails one left processing or stored with another payload", () => {
    const [a, b, c] = [send("a"), send("b"), send("c")];
    const records = new Map([
      record(a),
      record(b, { status: "processing" }),
      record(c, { status: "failed", to: "000" }),
    ]);
    const { figures, failures } = checkTerminal([a, b, c, send("d")], records);
    expect(figures).toEqual({
      accepted: 4,
      terminal: 2,
      byStatus: { sent: 1, processing: 1, failed: 1, unreadable: 1 },
    });
    expect(failures.map((f) => f.problem ?? f.status)).toEqual([
      "processing",
      "record differs from the accepted send",
      "unreadable",
    ]);
  });
});

describe("checkOperatorCalls", () => {
  it("passes one delivery per job, and retries of calls the operator did not process", () => {
    const [a, b] = [send("a"), send("b")];
    const calls = [call(a), call(b, { answer: "error", httpStatus: 429, processed: false }), call(b)];
    const { figures, failures } = checkOperatorCalls(calls, [a, b], new Map([record(a), record(b)]));
    expect(failures).toEqual([]);
    expect(figures).toMatchObject({
      calls: 3,
      jobsCalled: 2,
      maxCallsPerJob: 2,
      maxDeliveriesPerJob: 1,
      callsPerJob: { 1: 1, 2: 1 },
      answers: { accepted: 2, error: 1 },
    });
  });

  it("fails a second delivery, a call after a final refusal, a foreign jobId and a payload that is not the record's", () => {
    const [a, b, c] = [send("a"), send("b"), send("c")];
    const calls = [
      call(a),
      call(a),
      call(b, { answer: "error", httpStatus: 400, processed: false }),
      call(b, { answer: "error", httpStatus: 400, processed: false }),
      call(c, { text: "other" }),
      call(send("x")),
    ];
    const problems = checkOperatorCalls(calls, [a, b, c], new Map([record(a), record(b), record(c)])).failures.map(
      (f) => f.problem,
    );
    expect(problems).toEqual([
      "call for a jobId no accepted send has",
      "delivered to the operator more than once",
      "called again after a processed or final answer",
      "operator payload differs from the record",
    ]);
  });
});

describe("checkConversationOrder", () => {
  it("fails a later message called before the earlier one was answered, and ignores pairs the client did not order", () => {
    const a = send("a", { acceptedAt: 100, firstTriedAt: 90 });
    const b = send("b", { acceptedAt: 300, firstTriedAt: 200 });
    const overlapping = send("c", { acceptedAt: 250, firstTriedAt: 95 });
    const inOrder = checkConversationOrder([a, b], [call(a, { hr: 1_000, answeredHr: 1_100 }), call(b, { hr: 1_200 })]);
    expect(inOrder).toEqual({ figures: { orderedPairsChecked: 1 }, failures: [] });
    const outOfOrder = checkConversationOrder(
      [a, b, overlapping],
      [call(a, { hr: 1_000, answeredHr: 1_100 }), call(b, { hr: 1_050 }), call(overlapping, { hr: 900 })],
    );
    expect(outOfOrder.figures.orderedPairsChecked).toBe(1);
    expect(outOfOrder.failures).toEqual([
      { conversation: "p1/5511999", earlier: "a", later: "b", laterCalledBeforeEarlierAnsweredMs: 50 },
    ]);
  });
});

describe("checkEvents", () => {
  /** @param {string} webhookId @param {string} messageId @param {string} previousStatus @param {string} status @param {Record<string, unknown>} [extra] */
  const statusDelivery = (webhookId, messageId, previousStatus, status, extra = {}) => ({
    at: 0,
    numberId: "n1",
    webhookId,
    verified: true,
    status: 204,
    body: { type: "message.status", data: { messageId, previousStatus, status, ...extra } },
  });

  it("passes one event per change, counting a redelivery of the same webhook-id once", () => {
    const a = send("a");
    const deliveries = [
      statusDelivery("e1", "a", "queued", "processing"),
      statusDelivery("e2", "a", "processing", "sent"),
      statusDelivery("e2", "a", "processing", "sent"),
    ];
    const timelines = new Map([["a", [{ status: "queued" }, { status: "processing" }, { status: "sent" }]]]);
    const injected = new Map([["wamid.1", { from: "5511888", text: "hello" }]]);
    const inbound = {
      at: 0,
      numberId: "n1",
      webhookId: "e3",
      verified: true,
      status: 200,
      body: {
        type: "message.received",
        data: { upstreamMessageId: "wamid.1", from: "5511888", text: { body: "hello" } },
      },
    };
    const { figures, failures } = checkEvents([a], new Map([record(a)]), timelines, [...deliveries, inbound], injected);
    expect(failures).toEqual([]);
    expect(figures).toEqual({
      deliveries: 4,
      refusedByReceiver: 0,
      distinctEvents: 3,
      statusChanges: 2,
      statusEvents: 2,
      inboundInjected: 1,
      inboundWithOneEvent: 1,
    });
  });

  it("fails a missing change, two events for one change, an unverified signature and an inbound message without its event", () => {
    const [a, b] = [send("a"), send("b")];
    const timelines = new Map([
      ["a", [{ status: "queued" }, { status: "processing" }, { status: "sent" }]],
      ["b", [{ status: "queued" }, { status: "processing" }, { status: "sent" }]],
    ]);
    const deliveries = [
      statusDelivery("e1", "a", "processing", "sent"),
      statusDelivery("e2", "b", "queued", "processing"),
      statusDelivery("e3", "b", "queued", "processing"),
      { ...statusDelivery("e4", "b", "processing", "sent"), verified: false },
    ];
    const { failures } = checkEvents(
      [a, b],
      new Map([record(a), record(b)]),
      timelines,
      deliveries,
      new Map([["wamid.2", { from: "1", text: "x" }]]),
    );
    expect(failures.map((f) => f.problem)).toEqual([
      "deliveries whose Standard Webhooks signature did not verify",
      "a change without its event (the first event does not leave queued)",
      "two events for one change",
      "inbound message without its event",
    ]);
  });
});

describe("checkClientErrors", () => {
  it("excuses 5xx and network errors inside a kill window only", () => {
    const answers = [
      { op: "send", status: 201, start: 0, end: 10, error: null, requestId: "r1", code: null },
      { op: "send", status: 503, start: 100, end: 120, error: null, requestId: "r2", code: "internal_error" },
      { op: "read", status: null, start: 500, end: 900, error: "ECONNRESET", requestId: null, code: null },
    ];
    const { figures, failures } = checkClientErrors(answers, (start) => start >= 400);
    expect(figures).toEqual({
      answers: 3,
      byStatus: { 201: 1, 503: 1, "network:ECONNRESET": 1 },
      errorsInKillWindows: 1,
      errorsOutsideKillWindows: 1,
    });
    expect(failures).toEqual([
      {
        op: "send",
        status: 503,
        error: null,
        code: "internal_error",
        requestId: "r2",
        start: new Date(100).toISOString(),
        ms: 20,
      },
    ]);
  });
});

describe("queuedTimes", () => {
  it("measures acceptance to the operator's first call, for sends that were called", () => {
    const [a, b, c] = [send("a", { acceptedAt: 1_000 }), send("b", { acceptedAt: 1_000 }), send("c")];
    const times = queuedTimes([a, b, c], [call(a, { at: 1_300 }), call(a, { at: 1_100 }), call(b, { at: 1_500 })]);
    expect(times).toEqual({ count: 2, p50Ms: 100, p99Ms: 500, maxMs: 500 });
  });
});
