import { describe, expect, it } from "vitest";
import {
  checkClientErrors,
  checkConversationOrder,
  checkEvents,
  checkOperatorCalls,
  checkTerminal,
  killThatMayHaveLost,
  lossWindow,
  queuedTimes,
} from "../../../bench/soak/checks.ts";

/** @typedef {import("../../../bench/soak/checks.ts").AcceptedSend} AcceptedSend */
/** @typedef {import("../../../bench/lib/operator.ts").OperatorCall} OperatorCall */
/** @typedef {import("../../../bench/soak/checks.ts").MessageRecord} MessageRecord */
/** @typedef {import("../../../bench/soak/checks.ts").TimelineEntry} TimelineEntry */

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
  const A = "0190f1a2-b3c4-7d5e-8f60-718293a4b5c6";
  const B = "0190f1a2-b3c5-7aaa-9bbb-cccccccccccc";
  const CODES = { processing: 1, sent: 2, delivered: 3, read: 4, failed: 5 };
  /** The event id of a change, as src/messages/events.ts eventIdOf makes it. @param {string} messageId @param {keyof typeof CODES} kind */
  const eventId = (messageId, kind) => {
    const hex = messageId.replaceAll("-", "");
    return `evt_${hex.slice(0, 12)}${CODES[kind]}${hex.slice(13)}`;
  };
  /** @param {string} webhookId @param {string} messageId @param {string} previousStatus @param {string} status @param {Record<string, unknown>} [extra] */
  const statusDelivery = (webhookId, messageId, previousStatus, status, extra = {}) => ({
    at: 0,
    numberId: "n1",
    webhookId,
    verified: true,
    status: 204,
    body: { type: "message.status", data: { messageId, previousStatus, status, ...extra } },
  });
  /** @param {string} webhookId @param {string} wamid @param {string} from @param {string} text */
  const inboundDelivery = (webhookId, wamid, from, text) => ({
    at: 0,
    numberId: "n1",
    webhookId,
    verified: true,
    status: 200,
    body: { type: "message.received", data: { upstreamMessageId: wamid, from, text: { body: text } } },
  });
  const T = Date.UTC(2026, 10, 25, 12);
  const iso = (/** @type {number} */ ms) => new Date(ms).toISOString();
  /** A sent message's timeline: processing at T, sent at T + 1 s. @type {TimelineEntry[]} */
  const sentTimeline = [
    { status: "queued", at: iso(T - 100) },
    { status: "processing", at: iso(T) },
    { status: "sent", at: iso(T + 1_000) },
  ];
  const sentRecord = { processingAt: iso(T), sentAt: iso(T + 1_000) };

  it("passes one event per change, counting a redelivery of the same webhook-id once", () => {
    const a = send(A);
    const deliveries = [
      statusDelivery(eventId(A, "processing"), A, "queued", "processing"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      inboundDelivery("evt_in", "wamid.1", "5511888", "hello"),
    ];
    const { figures, failures } = checkEvents(
      [a],
      new Map([record(a, sentRecord)]),
      new Map([[A, sentTimeline]]),
      deliveries,
      new Map([["wamid.1", { from: "5511888", text: "hello" }]]),
    );
    expect(failures).toEqual([]);
    expect(figures).toEqual({
      deliveries: 4,
      refusedByReceiver: 0,
      distinctEvents: 3,
      statusChanges: 2,
      statusEvents: 2,
      lostWithQueueAtKill: [],
      lossWindowMs: 60_000,
      inboundInjected: 1,
      inboundWithOneEvent: 1,
      inboundLostWithQueue: 0,
      neverPublished: null,
    });
  });

  it("fails a missing change, two events for one change, a wrong previousStatus, an unverified signature and an inbound message without its event", () => {
    const [a, b] = [send(A), send(B)];
    const deliveries = [
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(B, "processing"), B, "queued", "processing"),
      statusDelivery("evt_other", B, "queued", "processing"),
      statusDelivery(eventId(B, "sent"), B, "queued", "sent"),
      { ...statusDelivery("evt_x", B, "processing", "sent"), verified: false, status: 400 },
    ];
    const { failures } = checkEvents(
      [a, b],
      new Map([record(a, sentRecord), record(b, sentRecord)]),
      new Map([
        [A, sentTimeline],
        [B, sentTimeline],
      ]),
      deliveries,
      new Map([["wamid.2", { from: "1", text: "x" }]]),
    );
    expect(failures.map((f) => [f.problem, f.kind])).toEqual([
      ["deliveries whose Standard Webhooks signature did not verify", undefined],
      ["event id does not name its message and change", undefined],
      ["a change without its event", "processing"],
      ["two events for one change", "processing"],
      ["an event's previousStatus is not the record's status before the change", "sent"],
      ["inbound message without its event", undefined],
    ]);
  });

  it("counts a change whose event a kill within 60 s may have lost with the in-memory queue, and fails one made earlier", () => {
    const a = send(A);
    const deliveries = [statusDelivery(eventId(A, "processing"), A, "queued", "processing")];
    /** @param {number[]} kills */
    const check = (kills) =>
      checkEvents(
        [a],
        new Map([record(a, sentRecord)]),
        new Map([[A, sentTimeline]]),
        deliveries,
        new Map([
          ["wamid.3", { from: "1", text: "x", at: T + 1_000 }],
          ["wamid.4", { from: "1", text: "y", at: T - 200_000 }],
        ]),
        kills,
      );
    // `sent` at T + 1 s: a kill 30 s later may have lost its event; one 2 minutes later may not.
    const near = check([T - 60_000, T + 31_000]);
    expect(near.figures.lostWithQueueAtKill).toEqual([0, 1]);
    expect(near.figures.inboundLostWithQueue).toBe(1);
    expect(near.failures.map((f) => f.problem)).toEqual(["inbound message without its event"]);
    const far = check([T + 121_000]);
    expect(far.figures.lostWithQueueAtKill).toEqual([0]);
    expect(far.failures.map((f) => [f.problem, f.kind ?? f.wamid])).toEqual([
      ["a change without its event", "sent"],
      ["inbound message without its event", "wamid.3"],
      ["inbound message without its event", "wamid.4"],
    ]);
  });

  it("with the event tap: an event the queue accepted before a process kill was lost with it; one never published fails, a kill or not", () => {
    const a = send(A);
    const deliveries = [statusDelivery(eventId(A, "processing"), A, "queued", "processing")];
    const kill = T + 30_000;
    /** @param {Map<string, number>} byEventId @param {Map<string, string>} receivedByWamid */
    const check = (byEventId, receivedByWamid = new Map()) =>
      checkEvents(
        [a],
        new Map([record(a, sentRecord)]),
        new Map([[A, sentTimeline]]),
        deliveries,
        new Map([["wamid.5", { from: "1", text: "x", at: T + 2_000 }]]),
        [kill],
        { byEventId, receivedByWamid },
      );
    // `sent` (T + 1 s) and the inbound message's event were accepted by the queue before the kill: lost with it.
    const queued = check(
      new Map([
        [eventId(A, "sent"), T + 1_100],
        ["evt_in5", T + 2_100],
      ]),
      new Map([["wamid.5", "evt_in5"]]),
    );
    expect(queued.failures).toEqual([]);
    expect(queued.figures).toMatchObject({ lostWithQueueAtKill: [1], inboundLostWithQueue: 1, neverPublished: 0 });
    // Neither was ever published: the engine lost them, although a kill came within the loss window.
    const never = check(new Map());
    expect(never.figures).toMatchObject({ lostWithQueueAtKill: [0], inboundLostWithQueue: 0, neverPublished: 2 });
    expect(never.failures.map((f) => [f.problem, f.kind ?? f.wamid])).toEqual([
      ["a change whose event the engine never published", "sent"],
      ["inbound message whose event the engine never published", "wamid.5"],
    ]);
    // Accepted by the queue after the last kill, and never delivered: the queue's loss with no kill to explain it.
    const late = check(new Map([[eventId(A, "sent"), kill + 1_000]]));
    expect(late.failures.map((f) => f.problem)).toContain(
      "a change whose event the queue accepted and never delivered",
    );
  });

  it("tells a failure after sent from one while processing", () => {
    const [a, b] = [send(A), send(B)];
    /** @type {Partial<MessageRecord>} */
    const afterSent = { status: "failed", processingAt: iso(T), sentAt: iso(T + 1_000), failedAt: iso(T + 5_000) };
    /** @type {Partial<MessageRecord>} */
    const whileProcessing = { status: "failed", processingAt: iso(T), failedAt: iso(T + 1_000) };
    const deliveries = [
      statusDelivery(eventId(A, "processing"), A, "queued", "processing"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(A, "failed"), A, "sent", "failed"),
      statusDelivery(eventId(B, "processing"), B, "queued", "processing"),
      statusDelivery(eventId(B, "failed"), B, "processing", "failed"),
    ];
    const { failures, figures } = checkEvents(
      [a, b],
      new Map([record(a, afterSent), record(b, whileProcessing)]),
      new Map([
        [A, [...sentTimeline, /** @type {TimelineEntry} */ ({ status: "failed", at: iso(T + 5_000) })]],
        [
          B,
          [
            { status: "processing", at: iso(T) },
            { status: "failed", at: iso(T + 1_000) },
          ],
        ],
      ]),
      deliveries,
      new Map(),
    );
    expect(failures).toEqual([]);
    expect(figures.statusChanges).toBe(5);
  });

  it("excuses a missing event when the run's slowest arrival shows the queue held events that long", () => {
    const [a, b] = [send(A), send(B)];
    // After the kill, B's events took 100 s to arrive: A's `sent`, 90 s before the kill, may have been lost with the queue.
    const kill = T + 91_000;
    /** @type {TimelineEntry[]} */
    const bTimeline = [
      { status: "processing", at: iso(kill + 5_000) },
      { status: "sent", at: iso(kill + 6_000) },
    ];
    const deliveries = [
      { ...statusDelivery(eventId(B, "processing"), B, "queued", "processing"), at: kill + 105_000 },
      { ...statusDelivery(eventId(B, "sent"), B, "processing", "sent"), at: kill + 106_000 },
      { ...statusDelivery(eventId(A, "processing"), A, "queued", "processing"), at: T + 5_000 },
    ];
    const bRecord = { processingAt: iso(kill + 5_000), sentAt: iso(kill + 6_000) };
    const { figures, failures } = checkEvents(
      [a, b],
      new Map([record(a, sentRecord), record(b, bRecord)]),
      new Map([
        [A, sentTimeline],
        [B, bTimeline],
      ]),
      deliveries,
      new Map(),
      [kill],
    );
    expect(failures).toEqual([]);
    expect(figures.lossWindowMs).toBe(100_000);
    expect(figures.lostWithQueueAtKill).toEqual([1]);
  });
});

describe("killThatMayHaveLost", () => {
  it("finds the kill that may have lost an event: the first within 60 s after the change", () => {
    expect(killThatMayHaveLost(1_000, [500, 30_000, 50_000])).toBe(1);
    expect(killThatMayHaveLost(1_000, [500, 62_000])).toBeNull();
    expect(killThatMayHaveLost(1_000, [])).toBeNull();
    expect(killThatMayHaveLost(1_000, [62_000], 90_000)).toBe(0);
  });

  it("widens the loss window to the slowest arrival within one instance, never below 60 s", () => {
    expect(lossWindow([{ changedAt: 0, deliveredAt: 30_000 }], [])).toBe(60_000);
    expect(lossWindow([{ changedAt: 0, deliveredAt: 90_000 }], [])).toBe(90_000);
    // A kill between the change and the delivery: the delivery may be of a second publication.
    expect(lossWindow([{ changedAt: 0, deliveredAt: 90_000 }], [50_000])).toBe(60_000);
    expect(lossWindow([{ changedAt: 10_000, deliveredAt: 0 }], [])).toBe(60_000);
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
