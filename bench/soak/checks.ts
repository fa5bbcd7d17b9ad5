// The invariants of `npm run soak`, computed from what the run recorded: the client's answers, the
// API's final records, the fake operator's calls and the customer receiver's deliveries. Each check
// returns its figures and its failing items; nothing here talks to the network.
import type { OperatorCall } from "../lib/operator.ts";
import type { Delivery, Published, WebhookBody } from "../lib/receiver.ts";
import { maxInWindow, percentile } from "../lib/run.ts";
import type { z } from "@hono/zod-openapi";
import { eventIdOf, parseEventId, type MessageStatusData } from "../../src/messages/events";
import type { OutboundMessage } from "../../src/messages/message";
import type { OutboundChange } from "../../src/messages/status";
import type { TimelineEntry as TimelineSchema } from "../../src/messages/timeline";

/** A send the API accepted, as the load recorded it. */
export interface AcceptedSend {
  jobId: string;
  /** Our channel number id. */
  numberId: string;
  /** The operator's id of that number. */
  phoneNumberId: string;
  to: string;
  text: string;
  /** When the 201 arrived (ms). */
  acceptedAt: number;
  /** When the client first sent it (ms). */
  firstTriedAt: number;
}
/** A message as GET /messages/{id} answers it (src/messages/message.ts; the checks read some of its fields). */
export type MessageRecord = Partial<OutboundMessage>;
/** A timeline entry as the API answers it (src/messages/timeline.ts). */
export type TimelineEntry = Pick<z.infer<typeof TimelineSchema>, "status"> & { at?: string };
/** One answer the load's client got. */
export interface ClientAnswer {
  op: string;
  status: number | null;
  start: number;
  end: number;
  error: string | null;
  requestId: string | null;
  code: string | null;
}
/** An inbound message the soak made the operator send (`at`: when it first posted it). */
export interface InjectedInbound {
  from: string;
  text: string;
  at?: number;
}
type Failure = Record<string, unknown>;
type StatusEvent = { id: string | null } & Partial<MessageStatusData>;
type StampedCall = OperatorCall & { startedAt: number };

/** Whether the number object stamped the call with its start time. */
const stamped = (c: OperatorCall): c is StampedCall => Number.isFinite(c.startedAt);

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V) {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
const count = (rec: Record<string, number>, key: string | number) => (rec[key] = (rec[key] ?? 0) + 1);

/** Every accepted send is terminal, and its record carries what the client sent. */
export function checkTerminal(accepted: AcceptedSend[], records: Map<string, MessageRecord>) {
  const failures: Failure[] = [];
  let terminal = 0;
  const byStatus: Record<string, number> = {};
  for (const s of accepted) {
    const m = records.get(s.jobId);
    const status = m?.status ?? "unreadable";
    count(byStatus, status);
    if (status === "sent" || status === "failed") terminal++;
    else
      failures.push({
        jobId: s.jobId,
        status,
        outcomeUnknownSince: m?.outcomeUnknownSince ?? null,
        processingAt: m?.processingAt ?? null,
      });
    if (m && (m.to !== s.to || m.text?.body !== s.text || m.channelNumberId !== s.numberId))
      failures.push({
        jobId: s.jobId,
        problem: "record differs from the accepted send",
        record: { to: m.to, text: m.text, channelNumberId: m.channelNumberId },
      });
  }
  return { figures: { accepted: accepted.length, terminal, byStatus }, failures };
}

/**
 * At most one delivery to the operator per jobId: a call the operator processed (accepted, or whose
 * answer was lost) or refused for good is never followed by another call for that jobId. Calls
 * refused as "not processed" (429, transient codes) are retried by design and counted apart. Every
 * call's payload is the record's, for the number's own phone number id.
 */
export function checkOperatorCalls(
  calls: OperatorCall[],
  accepted: AcceptedSend[],
  records: Map<string, MessageRecord>,
) {
  const failures: Failure[] = [];
  const sendOf = new Map<string | null, AcceptedSend>(accepted.map((s) => [s.jobId, s]));
  const byJob = new Map<string | null, OperatorCall[]>();
  for (const c of calls) {
    if (sendOf.has(c.jobId)) pushTo(byJob, c.jobId, c);
    else failures.push({ problem: "call for a jobId no accepted send has", jobId: c.jobId, seq: c.seq });
  }
  let maxCalls = 0;
  let maxDeliveries = 0;
  const callsPerJob: Record<number, number> = {};
  for (const [jobId, list] of byJob) {
    list.sort((a, b) => a.seq - b.seq);
    maxCalls = Math.max(maxCalls, list.length);
    count(callsPerJob, list.length);
    const deliveries = list.filter((c) => c.processed).length;
    maxDeliveries = Math.max(maxDeliveries, deliveries);
    const endIndex = list.findIndex((c) => c.processed || (c.answer === "error" && c.httpStatus === 400));
    if (deliveries > 1)
      failures.push({
        problem: "delivered to the operator more than once",
        jobId,
        calls: list.map((c) => ({ seq: c.seq, answer: c.answer })),
      });
    else if (endIndex !== -1 && endIndex < list.length - 1)
      failures.push({
        problem: "called again after a processed or final answer",
        jobId,
        calls: list.map((c) => ({ seq: c.seq, answer: c.answer, code: c.code })),
      });
    const s = sendOf.get(jobId) as AcceptedSend;
    const want = (jobId === null ? undefined : records.get(jobId)) ?? { to: s.to, text: { body: s.text } };
    for (const c of list)
      if (
        c.to !== `+${want.to}` ||
        c.text !== want.text?.body ||
        c.phoneNumberId !== s.phoneNumberId ||
        c.messagingProduct !== "whatsapp"
      )
        failures.push({
          problem: "operator payload differs from the record",
          jobId,
          seq: c.seq,
          call: { to: c.to, text: c.text, phoneNumberId: c.phoneNumberId },
        });
  }
  const answers: Record<string, number> = {};
  for (const c of calls) count(answers, c.answer);
  return {
    figures: {
      calls: calls.length,
      jobsCalled: byJob.size,
      maxCallsPerJob: maxCalls,
      maxDeliveriesPerJob: maxDeliveries,
      callsPerJob,
      answers,
    },
    failures,
  };
}

/**
 * The 2-per-second limit. The invariant: no number starts a third call less than 1,000 ms after the
 * call before the last, by the time the number object started each call (X-Call-Started-At, the
 * moment its fetch was issued; the soak sets UPSTREAM_STAMP_CALLS). A call without that stamp fails.
 *
 * Beside it, the same count by the fake operator's receive times: each is known within the
 * operator's own measured lateness, [earliest, hr] (lib/operator.ts), and a window counts when even
 * the widest placement of its calls spans less than 1,000 ms. Those windows are figures, not the
 * invariant: between the start and the arrival lies the runtime's transit (`at − startedAt`), which
 * the object cannot observe, and a number that starts calls at its full 2/s can only keep every
 * arrival window at 2 if its margin exceeds the spread of that transit (docs/architecture.md).
 * Each such window is listed with the transit of its calls.
 */
export function checkNumberRate(calls: OperatorCall[]) {
  const failures: Failure[] = [];
  const byNumber = new Map<string, OperatorCall[]>();
  for (const c of calls) pushTo(byNumber, c.phoneNumberId, c);
  const unstamped = calls.filter((c) => !stamped(c));
  for (const c of unstamped.slice(0, 5))
    failures.push({ problem: "call without X-Call-Started-At", jobId: c.jobId, attempt: c.attempt });
  const transit = calls.filter(stamped).map((c) => c.at - c.startedAt);
  let maxStarted = 0;
  let minStartSpanOf3 = Infinity;
  let maxMeasured = 0;
  let maxCertain = 0;
  const arrivalWindows: Array<Record<string, unknown>> = [];
  const uncertainty = calls.map((c) => c.hr - (c.earliest ?? c.hr));
  for (const [phoneNumberId, list] of byNumber) {
    // As started by the object.
    const started = list.filter(stamped).sort((a, b) => a.startedAt - b.startedAt);
    const startOf = (n: number) => (started[n] as StampedCall).startedAt;
    maxStarted = Math.max(maxStarted, maxInWindow(started.map((c) => c.startedAt)));
    for (let i = 0, j = 0; i < started.length; i++) {
      while (startOf(i) - startOf(j) >= 1_000) j++;
      if (i >= 2) minStartSpanOf3 = Math.min(minStartSpanOf3, startOf(i) - startOf(i - 2));
      if (i - j + 1 > 2)
        failures.push({
          phoneNumberId,
          calls: i - j + 1,
          startedSpanMs: startOf(i) - startOf(j),
          jobs: started.slice(j, i + 1).map((c) => `${c.jobId}#${c.attempt}`),
        });
    }
    // As received by the operator.
    list.sort((a, b) => a.hr - b.hr);
    const callAt = (n: number) => list[n] as OperatorCall;
    maxMeasured = Math.max(maxMeasured, maxInWindow(list.map((c) => c.hr)));
    for (let i = 0; i < list.length; i++) {
      const last = callAt(i);
      // The largest k such that the last k calls up to i surely arrived within under 1,000 ms.
      let k = 1;
      let earliest = last.earliest ?? last.hr;
      for (let m = i - 1; m >= 0 && last.hr - callAt(m).hr < 1_000; m--) {
        earliest = Math.min(earliest, callAt(m).earliest ?? callAt(m).hr);
        if (last.hr - earliest < 1_000) k = i - m + 1;
        else break;
      }
      maxCertain = Math.max(maxCertain, k);
      if (k > 2) {
        const group = list.slice(i - k + 1, i + 1);
        const first = group[0] as OperatorCall;
        arrivalWindows.push({
          phoneNumberId,
          calls: k,
          firstAt: new Date(first.at).toISOString(),
          arrivalSpanMs: +(last.hr - first.hr).toFixed(3),
          startedSpanMs: stamped(first) && stamped(last) ? last.startedAt - first.startedAt : null,
          transitMs: group.map((c) => (stamped(c) ? c.at - c.startedAt : null)),
        });
      }
    }
  }
  const ms3 = (p: number) => +(percentile(uncertainty, p) ?? 0).toFixed(3);
  return {
    figures: {
      maxCallsPerNumberIn1sAsStarted: maxStarted,
      minStartedSpanOf3ConsecutiveCallsMs: Number.isFinite(minStartSpanOf3) ? minStartSpanOf3 : null,
      unstampedCalls: unstamped.length,
      transitMs: { p50: percentile(transit, 50), p99: percentile(transit, 99), max: percentile(transit, 100) },
      maxCallsPerNumberIn1sAsReceived: maxCertain,
      maxCallsPerNumberIn1sByReceiveTimeAlone: maxMeasured,
      windowsOver2AsReceived: arrivalWindows.length,
      arrivalWindows,
      receiveTimeUncertaintyMs: { p50: ms3(50), p99: ms3(99), max: ms3(100) },
    },
    failures,
  };
}

/** Messages to one recipient reach the operator in acceptance order, one at a time. */
export function checkConversationOrder(accepted: AcceptedSend[], calls: OperatorCall[]) {
  const failures: Failure[] = [];
  const callsOf = new Map<string | null, OperatorCall[]>();
  for (const c of calls) pushTo(callsOf, c.jobId, c);
  const byConversation = new Map<string, AcceptedSend[]>();
  for (const s of accepted) pushTo(byConversation, `${s.phoneNumberId}/${s.to}`, s);
  let pairs = 0;
  for (const list of byConversation.values())
    // Only pairs whose order the client knows: the first was accepted before the second was first tried.
    for (const a of list) {
      const aCalls = callsOf.get(a.jobId);
      if (!aCalls?.length) continue;
      const aLastAnswered = Math.max(...aCalls.map((c) => c.answeredHr ?? NaN));
      for (const b of list) {
        if (b === a || !(a.acceptedAt < b.firstTriedAt)) continue;
        const bCalls = callsOf.get(b.jobId);
        if (!bCalls?.length) continue;
        pairs++;
        const bFirst = Math.min(...bCalls.map((c) => c.hr));
        if (bFirst < aLastAnswered)
          failures.push({
            conversation: `${a.phoneNumberId}/${a.to}`,
            earlier: a.jobId,
            later: b.jobId,
            laterCalledBeforeEarlierAnsweredMs: +(aLastAnswered - bFirst).toFixed(3),
          });
      }
    }
  return { figures: { orderedPairsChecked: pairs }, failures };
}

/** The change a `message.status` event announces, from its content (message-events.ts: content as of that change). */
const kindOfContent = (e: StatusEvent) =>
  e.status === "processing"
    ? "processing"
    : e.status === "failed"
      ? "failed"
      : e.readAt
        ? "read"
        : e.deliveredAt
          ? "delivered"
          : "sent";

/**
 * Where a change whose event never reached the customer was lost, when the tap heard what was
 * published (`published`): with the in-memory queue, at the first process kill after the queue
 * accepted it (`{ kill }`); after the queue accepted it with no kill to explain it (`"undelivered"`);
 * or never published at all (`"never"`: the engine's loss, whatever killed or restarted what).
 * Without the tap, by the loss window before a kill only (killThatMayHaveLost).
 */
export function whereLost(
  eventId: string | undefined,
  changedAt: number,
  kills: number[],
  windowMs: number,
  published: Published | undefined,
): { kill: number } | "never" | "undelivered" {
  if (!published) {
    const kill = killThatMayHaveLost(changedAt, kills, windowMs);
    return kill === null ? "never" : { kill };
  }
  const at = eventId === undefined ? undefined : published.byEventId.get(eventId);
  if (at === undefined) return "never";
  const kill = kills.findIndex((k) => k >= at);
  return kill === -1 ? "undelivered" : { kill };
}

/** The status a record had just before a change (message-events.ts previousOf). */
function previousStatusOf(m: MessageRecord, kind: string) {
  if (kind === "processing") return "queued";
  if (kind === "sent") return "processing";
  if (kind === "delivered" || kind === "read") return "sent";
  const failedAt = m.failedAt ?? "";
  if (m.sentAt && m.sentAt <= failedAt) return "sent";
  return m.processingAt && m.processingAt <= failedAt ? "processing" : "queued";
}

/**
 * How long after a change its event may still be in the local runtime's queue, at least. Local
 * queues are in memory, so a kill loses what they hold (production queues are durable); a change
 * whose event never came and that happened at most the loss window before a kill is counted as lost
 * with the queue, not as a failure. The window is this, or longer when the run shows events taking
 * longer to arrive (lossWindow). Any other missing event fails.
 */
export const LOST_WITH_QUEUE_MS = 60_000;

/**
 * The loss window of a run: the longest an event took from its change to its first accepted
 * delivery, among events whose change and delivery fell between the same two kills, and at least
 * LOST_WITH_QUEUE_MS. Under load the local queue holds events for minutes; a kill within that long
 * after a change may have lost its event, whatever the engine did.
 */
export function lossWindow(arrivals: Array<{ changedAt: number; deliveredAt: number }>, kills: number[]) {
  let longest = LOST_WITH_QUEUE_MS;
  for (const { changedAt, deliveredAt } of arrivals) {
    if (!(deliveredAt >= changedAt) || kills.some((k) => k >= changedAt && k <= deliveredAt)) continue;
    longest = Math.max(longest, deliveredAt - changedAt);
  }
  return longest;
}

/** The index of the first kill at or after `at` within `windowMs` (it may have lost that change's event), or null. */
export function killThatMayHaveLost(at: number, kills: number[], windowMs = LOST_WITH_QUEUE_MS) {
  const i = kills.findIndex((k) => k >= at && k - at <= windowMs);
  return i === -1 ? null : i;
}

/**
 * Exactly one customer event per change, within one runtime instance. Events are derived from the
 * record, one id per change (`eventIdOf(messageId, kind)`): the distinct events a message got (by
 * webhook-id, answered 2xx by the customer) must be one per change of its timeline (`processing`,
 * `sent`, `delivered`, `read`, `failed`; creation and `outcome_unknown` are not announced), each as
 * of its change (its id and its content naming that change, `previousStatus` the record's status
 * just before it), none for a change the record does not have, never two for one change. A change
 * without its event fails, unless a kill came within the run's loss window after it (lossWindow;
 * figures `lostWithQueueAtKill`, `lossWindowMs`). Inbound: one `message.received` per operator
 * message id, with the same exception from its injection. With the event tap (`published`), the
 * exception is exact instead (whereLost): an event lost with the queue is one the queue accepted
 * before a process kill; one the engine never published fails (`neverPublished`, must be 0),
 * whatever was killed or restarted (objects alone, or the process).
 */
export function checkEvents(
  accepted: AcceptedSend[],
  records: Map<string, MessageRecord>,
  timelines: Map<string, TimelineEntry[]>,
  deliveries: Delivery[],
  injected: Map<string, InjectedInbound>,
  kills: number[] = [],
  published: Published | undefined = undefined,
) {
  const failures: Failure[] = [];
  const received = new Map<string | null, WebhookBody | null>();
  const firstDelivery = new Map<string | null, number>();
  let refusedByUs = 0;
  let unverified = 0;
  for (const d of deliveries) {
    if (!d.verified) unverified++;
    if (d.status >= 200 && d.status < 300) {
      if (!received.has(d.webhookId)) received.set(d.webhookId, d.body);
      if (!firstDelivery.has(d.webhookId)) firstDelivery.set(d.webhookId, d.at);
    } else refusedByUs++;
  }
  if (unverified)
    failures.push({ problem: "deliveries whose Standard Webhooks signature did not verify", count: unverified });
  const statusEvents = new Map<string | undefined, StatusEvent[]>();
  const receivedEvents = new Map<
    string | undefined,
    Array<{ id: string | null; from?: unknown; text?: { body?: string } }>
  >();
  for (const [id, body] of received) {
    if (body?.type === "message.status") {
      const event = { id, ...body.data } as StatusEvent;
      const named = parseEventId(id ?? "");
      if (
        !named ||
        !("kind" in named) ||
        named.messageId !== body.data.messageId ||
        named.kind !== kindOfContent(event)
      )
        failures.push({ problem: "event id does not name its message and change", id, messageId: body.data.messageId });
      pushTo(statusEvents, body.data.messageId, event);
    } else if (body?.type === "message.received")
      pushTo(receivedEvents, body.data.upstreamMessageId, { id, ...body.data });
  }
  const ours = new Set<string | undefined>(accepted.map((s) => s.jobId));
  for (const k of statusEvents.keys())
    if (!ours.has(k)) failures.push({ problem: "status event for a message no accepted send has", messageId: k });

  const arrivals: Array<{ changedAt: number; deliveredAt: number }> = [];
  for (const s of accepted)
    for (const e of statusEvents.get(s.jobId) ?? []) {
      const change = (timelines.get(s.jobId) ?? []).find((t) => t.status === kindOfContent(e));
      const deliveredAt = firstDelivery.get(e.id);
      if (change?.at && deliveredAt !== undefined) arrivals.push({ changedAt: Date.parse(change.at), deliveredAt });
    }
  for (const [wamid, sent] of injected) {
    const e = receivedEvents.get(wamid)?.[0];
    const deliveredAt = e ? firstDelivery.get(e.id) : undefined;
    if (sent.at !== undefined && deliveredAt !== undefined) arrivals.push({ changedAt: sent.at, deliveredAt });
  }
  const windowMs = lossWindow(arrivals, kills);

  let changes = 0;
  let events = 0;
  const lostAtKill = kills.map(() => 0);
  let neverPublished = 0;
  for (const s of accepted) {
    const m = records.get(s.jobId);
    // Changes: the timeline but its creation (`queued`) and `outcome_unknown` (a note, not a change).
    const timeline = (timelines.get(s.jobId) ?? []).filter(
      (t) => t.status !== "outcome_unknown" && t.status !== "queued",
    );
    changes += timeline.length;
    const list = statusEvents.get(s.jobId) ?? [];
    events += list.length;
    const problem = (why: string, more: Record<string, unknown> = {}) =>
      failures.push({
        jobId: s.jobId,
        problem: why,
        ...more,
        timeline: timeline.map((t) => `${t.status}@${t.at}`),
        events: list.map((e) => `${e.previousStatus}→${kindOfContent(e)} ${e.id}`),
      });
    if (!m) {
      problem("record unreadable");
      continue;
    }
    const byKind = new Map<string, StatusEvent[]>();
    for (const e of list) pushTo(byKind, kindOfContent(e), e);
    for (const [kind, es] of byKind) {
      if (es.length > 1) problem("two events for one change", { kind });
      if (!timeline.some((t) => t.status === kind)) problem("an event for a change the record does not have", { kind });
      for (const e of es)
        if (e.previousStatus !== previousStatusOf(m, kind))
          problem("an event's previousStatus is not the record's status before the change", {
            kind,
            previousStatus: e.previousStatus,
          });
    }
    for (const t of timeline) {
      if (byKind.has(t.status)) continue;
      const lost = whereLost(
        eventIdOf(s.jobId, t.status as OutboundChange),
        Date.parse(t.at ?? ""),
        kills,
        windowMs,
        published,
      );
      if (typeof lost === "object") lostAtKill[lost.kill] = (lostAtKill[lost.kill] ?? 0) + 1;
      else if (lost === "undelivered")
        problem("a change whose event the queue accepted and never delivered", { kind: t.status });
      else {
        if (published) neverPublished++;
        problem(published ? "a change whose event the engine never published" : "a change without its event", {
          kind: t.status,
        });
      }
    }
  }

  let inboundOk = 0;
  let inboundLost = 0;
  for (const [wamid, sent] of injected) {
    const list = receivedEvents.get(wamid) ?? [];
    const lost =
      list.length === 0 && sent.at !== undefined
        ? whereLost(published?.receivedByWamid.get(wamid), sent.at, kills, windowMs, published)
        : null;
    if (list.length === 1 && list[0]?.from === sent.from && list[0]?.text?.body === sent.text) inboundOk++;
    else if (lost !== null && typeof lost === "object") inboundLost++;
    else {
      if (published && lost === "never") neverPublished++;
      failures.push({
        problem:
          list.length > 1
            ? "inbound message with several events"
            : list.length === 1
              ? "inbound event differs"
              : lost === "undelivered"
                ? "inbound message whose event the queue accepted and never delivered"
                : published
                  ? "inbound message whose event the engine never published"
                  : "inbound message without its event",
        wamid,
        events: list.map((e) => e.id),
      });
    }
  }
  for (const wamid of receivedEvents.keys())
    if (wamid === undefined || !injected.has(wamid))
      failures.push({ problem: "message.received for a message the operator never sent", wamid });

  return {
    figures: {
      deliveries: deliveries.length,
      refusedByReceiver: refusedByUs,
      distinctEvents: received.size,
      statusChanges: changes,
      statusEvents: events,
      lostWithQueueAtKill: lostAtKill,
      lossWindowMs: windowMs,
      inboundInjected: injected.size,
      inboundWithOneEvent: inboundOk,
      inboundLostWithQueue: inboundLost,
      // Counted with the event tap only (null without it): changes and inbound messages whose event never left the engine.
      neverPublished: published ? neverPublished : null,
    },
    failures,
  };
}

/** No 5xx and no network failure outside the kill and restart windows. */
export function checkClientErrors(answers: ClientAnswer[], inKillWindow: (start: number, end: number) => boolean) {
  const failures: Failure[] = [];
  let inWindow = 0;
  const statuses: Record<string, number> = {};
  for (const a of answers) {
    count(statuses, a.status === null ? `network:${a.error}` : String(a.status));
    if (a.status !== null && a.status < 500) continue;
    if (inKillWindow(a.start, a.end)) inWindow++;
    else
      failures.push({
        op: a.op,
        status: a.status,
        error: a.error,
        code: a.code,
        requestId: a.requestId,
        start: new Date(a.start).toISOString(),
        ms: a.end - a.start,
      });
  }
  return {
    figures: {
      answers: answers.length,
      byStatus: statuses,
      errorsInKillWindows: inWindow,
      errorsOutsideKillWindows: failures.length,
    },
    failures,
  };
}

/** Accepted (the client got its 201) → the operator received the first call. */
export function queuedTimes(accepted: AcceptedSend[], calls: OperatorCall[]) {
  const first = new Map<string | null, number>();
  for (const c of calls) {
    const known = first.get(c.jobId);
    if (known === undefined || c.at < known) first.set(c.jobId, c.at);
  }
  const times = accepted.flatMap((s) => {
    const at = first.get(s.jobId);
    return at === undefined ? [] : [at - s.acceptedAt];
  });
  return {
    count: times.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    maxMs: percentile(times, 100),
  };
}
