import { describe, expect, it } from "vitest";
import {
  checkClientErrors,
  checkConversationOrder,
  checkEvents,
  checkOperatorCalls,
  checkTerminal,
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
  answeredAt: 2_100,
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
    const inOrder = checkConversationOrder([a, b], [call(a, { at: 1_000, answeredAt: 1_100 }), call(b, { at: 1_200 })]);
    expect(inOrder).toEqual({ figures: { orderedPairsChecked: 1 }, failures: [] });
    const outOfOrder = checkConversationOrder(
      [a, b, overlapping],
      [call(a, { at: 1_000, answeredAt: 1_100 }), call(b, { at: 1_050 }), call(overlapping, { at: 900 })],
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
  /** Nothing published that never arrived: no kill, and the tap heard nothing else. */
  const noTap = { byEventId: new Map(), receivedByWamid: new Map() };

  it("passes one event per change, each as of its change, counting a redelivery of the same webhook-id once", () => {
    const a = send(A);
    const deliveredAt = iso(T + 2_000);
    const deliveries = [
      statusDelivery(eventId(A, "processing"), A, "queued", "processing"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(A, "delivered"), A, "sent", "sent", { deliveredAt }),
      inboundDelivery("evt_in", "wamid.1", "5511888", "hello"),
    ];
    const { figures, failures } = checkEvents(
      [a],
      new Map([[A, [...sentTimeline, /** @type {TimelineEntry} */ ({ status: "delivered", at: deliveredAt })]]]),
      deliveries,
      new Map([["wamid.1", { from: "5511888", text: "hello" }]]),
      [],
      noTap,
    );
    expect(failures).toEqual([]);
    expect(figures).toEqual({
      deliveries: 5,
      refusedByReceiver: 0,
      distinctEvents: 4,
      statusChanges: 3,
      statusEvents: 3,
      lostWithQueueAtKill: [],
      inboundInjected: 1,
      inboundWithOneEvent: 1,
      inboundLostWithQueue: 0,
      neverPublished: 0,
    });
  });

  it("fails a missing change, an event under an id of no change, content not as of the change, an unverified signature and an inbound message without its event", () => {
    const [a, b] = [send(A), send(B)];
    const deliveries = [
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(B, "processing"), B, "queued", "processing"),
      statusDelivery("evt_other", B, "queued", "processing"),
      statusDelivery(eventId(B, "sent"), B, "queued", "sent"),
      statusDelivery(eventId(B, "delivered"), B, "sent", "sent"),
      { ...statusDelivery("evt_x", B, "processing", "sent"), verified: false, status: 400 },
    ];
    const bTimeline = [...sentTimeline, /** @type {TimelineEntry} */ ({ status: "delivered", at: iso(T + 2_000) })];
    const { failures } = checkEvents(
      [a, b],
      new Map([
        [A, sentTimeline],
        [B, bTimeline],
      ]),
      deliveries,
      new Map([["wamid.2", { from: "1", text: "x" }]]),
      [],
      noTap,
    );
    expect(failures.map((f) => [f.problem, f.kind])).toEqual([
      ["deliveries whose Standard Webhooks signature did not verify", undefined],
      ["event id does not name its message and change", undefined],
      ["a change whose event the engine never published", "processing"],
      ["an event's content is not the record's as of its change", "sent"],
      ["an event's content is not the record's as of its change", "delivered"],
      ["inbound message whose event the engine never published", undefined],
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
    // Neither was ever published: the engine lost them, although a kill came after.
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
    const deliveries = [
      statusDelivery(eventId(A, "processing"), A, "queued", "processing"),
      statusDelivery(eventId(A, "sent"), A, "processing", "sent"),
      statusDelivery(eventId(A, "failed"), A, "sent", "failed"),
      statusDelivery(eventId(B, "processing"), B, "queued", "processing"),
      statusDelivery(eventId(B, "failed"), B, "processing", "failed"),
    ];
    const { failures, figures } = checkEvents(
      [a, b],
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
      [],
      noTap,
    );
    expect(failures).toEqual([]);
    expect(figures.statusChanges).toBe(5);
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
        end: 120,
        ms: 20,
      },
    ]);
  });
});
