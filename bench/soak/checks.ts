// The invariants of `npm run soak`, computed from what the run recorded: the client's answers, the
// API's final records, the fake operator's calls and the customer receiver's deliveries. Each check
// returns its figures and its failing items; nothing here talks to the network.
import type { OperatorCall } from "../lib/operator.ts";
import type { Delivery, Published, WebhookBody } from "../lib/receiver.ts";
import { maxInWindow, percentile } from "../lib/run.ts";
import type { z } from "@hono/zod-openapi";
import { eventIdOf, parseEventId, type MessageReceivedData, type MessageStatusData } from "../../src/messages/events";
import type { OutboundMessage } from "../../src/messages/message";
import { statusesAfter, type EventKind, type OutboundChange } from "../../src/messages/status";
import type { TimelineEntry as TimelineSchema } from "../../src/messages/timeline";

/** A send the API accepted, as the load recorded it (load.ts's `LoadSend` once accepted). */
export interface AcceptedSend {
  jobId: string;
  /** Our channel number id; `phoneNumberId` is the operator's. */
  numberId: string;
  phoneNumberId: string;
  to: string;
  text: string;
  /** When the 201 arrived, and when the client first sent it (ms). */
  acceptedAt: number;
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
/** An inbound message the soak made the operator send. */
export type InjectedInbound = { from: string; text: string };
type Failure = Record<string, unknown>;
type StatusEvent = { id: string | null; kind: EventKind } & Partial<MessageStatusData>;
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
    else failures.push({ jobId: s.jobId, status, outcomeUnknownSince: m?.outcomeUnknownSince ?? null });
    if (m && (m.to !== s.to || m.text?.body !== s.text || m.channelNumberId !== s.numberId))
      failures.push({ jobId: s.jobId, problem: "record differs from the accepted send", record: m });
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
    const seen = list.map((c) => `#${c.seq} ${c.answer} ${c.code ?? ""}`);
    if (deliveries > 1) failures.push({ problem: "delivered to the operator more than once", jobId, calls: seen });
    else if (endIndex !== -1 && endIndex < list.length - 1)
      failures.push({ problem: "called again after a processed or final answer", jobId, calls: seen });
    const s = sendOf.get(jobId) as AcceptedSend;
    const want = (jobId === null ? undefined : records.get(jobId)) ?? { to: s.to, text: { body: s.text } };
    for (const c of list)
      if (
        c.to !== `+${want.to}` ||
        c.text !== want.text?.body ||
        c.phoneNumberId !== s.phoneNumberId ||
        c.messagingProduct !== "whatsapp"
      )
        failures.push({ problem: "operator payload differs from the record", jobId, call: c });
  }
  const answers: Record<string, number> = {};
  for (const c of calls) count(answers, c.answer);
  const most = { maxCallsPerJob: maxCalls, maxDeliveriesPerJob: maxDeliveries };
  return { figures: { calls: calls.length, jobsCalled: byJob.size, ...most, callsPerJob, answers }, failures };
}

/**
 * The 2-per-second limit: no number starts a third call less than 1,000 ms after the call before
 * the last, by the time the number object started each call (X-Call-Started-At, the moment its
 * fetch was issued; the soak sets UPSTREAM_STAMP_CALLS). A call without that stamp fails. Beside
 * it, the transit from that start to the operator's receipt (`at − startedAt`), which the object
 * cannot observe (docs/architecture.md, "Where the pace holds").
 */
export function checkNumberRate(calls: OperatorCall[]) {
  const failures: Failure[] = [];
  const byNumber = new Map<string, StampedCall[]>();
  const unstamped = calls.filter((c) => !stamped(c));
  for (const c of unstamped.slice(0, 5))
    failures.push({ problem: "call without X-Call-Started-At", jobId: c.jobId, attempt: c.attempt });
  for (const c of calls) if (stamped(c)) pushTo(byNumber, c.phoneNumberId, c);
  const transit = calls.filter(stamped).map((c) => +(c.at - c.startedAt).toFixed(1));
  let maxStarted = 0;
  let minStartSpanOf3 = Infinity;
  for (const [phoneNumberId, list] of byNumber) {
    const starts = list.sort((a, b) => a.startedAt - b.startedAt).map((c) => c.startedAt);
    maxStarted = Math.max(maxStarted, maxInWindow(starts));
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[i]! - starts[j]! >= 1_000) j++;
      if (i >= 2) minStartSpanOf3 = Math.min(minStartSpanOf3, starts[i]! - starts[i - 2]!);
      if (i - j + 1 > 2)
        failures.push({
          ...{ phoneNumberId, calls: i - j + 1, startedSpanMs: starts[i]! - starts[j]! },
          jobs: list.slice(j, i + 1).map((c) => `${c.jobId}#${c.attempt}`),
        });
    }
  }
  return {
    figures: {
      maxCallsPerNumberIn1sAsStarted: maxStarted,
      minStartedSpanOf3ConsecutiveCallsMs: Number.isFinite(minStartSpanOf3) ? minStartSpanOf3 : null,
      unstampedCalls: unstamped.length,
      transitMs: { p50: percentile(transit, 50), p99: percentile(transit, 99), max: percentile(transit, 100) },
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
      const aLastAnswered = Math.max(...aCalls.map((c) => c.answeredAt ?? NaN));
      for (const b of list) {
        if (b === a || !(a.acceptedAt < b.firstTriedAt)) continue;
        const bCalls = callsOf.get(b.jobId);
        if (!bCalls?.length) continue;
        pairs++;
        const bFirst = Math.min(...bCalls.map((c) => c.at));
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

/**
 * Exactly one customer event per change. Events are derived from the record, one id per change
 * (`eventIdOf(messageId, kind)`): the distinct events a message got (by webhook-id, answered 2xx by
 * the customer) must be one per change of its timeline (`processing`, `sent`, `delivered`, `read`,
 * `failed`; creation and `outcome_unknown` are not announced), each as of its change (its id naming
 * the message and the change; its status, `previousStatus`, delivery and read times what src/
 * derives from the timeline's order), none for a change the record does not have (an id that names
 * no change fails). Inbound: one `message.received` per operator message id. A missing event is
 * told apart by what the event tap heard published: lost with the in-memory queue when the queue
 * accepted it before a process kill (counted per kill, not a failure: production's queues are
 * durable); never published (`neverPublished`, must be 0: the engine's loss) or accepted with no
 * kill after it: failures.
 */
export function checkEvents(
  accepted: AcceptedSend[],
  timelines: Map<string, TimelineEntry[]>,
  deliveries: Delivery[],
  injected: Map<string, InjectedInbound>,
  kills: number[],
  published: Published,
) {
  const failures: Failure[] = [];
  const received = new Map<string | null, WebhookBody | null>();
  let refusedByUs = 0;
  let unverified = 0;
  for (const d of deliveries) {
    if (!d.verified) unverified++;
    if (d.status < 200 || d.status >= 300) refusedByUs++;
    else if (!received.has(d.webhookId)) received.set(d.webhookId, d.body);
  }
  if (unverified)
    failures.push({ problem: "deliveries whose Standard Webhooks signature did not verify", count: unverified });
  const statusEvents = new Map<string | undefined, StatusEvent[]>();
  const receivedEvents = new Map<string | undefined, Array<{ id: string | null } & Partial<MessageReceivedData>>>();
  for (const [id, body] of received) {
    if (body?.type === "message.status") {
      const named = parseEventId(id ?? "");
      if (named && "kind" in named && named.messageId === body.data.messageId)
        pushTo(statusEvents, body.data.messageId, { id, kind: named.kind, ...body.data });
      else
        failures.push({ problem: "event id does not name its message and change", id, messageId: body.data.messageId });
    } else if (body?.type === "message.received")
      pushTo(receivedEvents, body.data.upstreamMessageId, { id, ...body.data });
  }
  const ours = new Set<string | undefined>(accepted.map((s) => s.jobId));
  for (const k of statusEvents.keys())
    if (!ours.has(k)) failures.push({ problem: "status event for a message no accepted send has", messageId: k });

  let changes = 0;
  let events = 0;
  const lostAtKill = kills.map(() => 0);
  let neverPublished = 0;
  /** A missing event: the kill whose queue lost it, or null once `fail` was told why it is missing. */
  const lostAt = (eventId: string | undefined, fail: (why: string) => void) => {
    const at = eventId === undefined ? undefined : published.byEventId.get(eventId);
    const kill = at === undefined ? -1 : kills.findIndex((k) => k >= at);
    if (kill !== -1) return kill;
    if (at === undefined) neverPublished++;
    fail(
      at === undefined
        ? "whose event the engine never published"
        : "whose event the queue accepted and never delivered",
    );
    return null;
  };
  for (const s of accepted) {
    // Changes: the timeline (in commit order) but its creation (`queued`) and `outcome_unknown` (a note, not a change).
    const timeline = (timelines.get(s.jobId) ?? []).filter(
      (t) => t.status !== "outcome_unknown" && t.status !== "queued",
    );
    const kinds = timeline.map((t) => t.status as EventKind);
    const statuses = statusesAfter(kinds);
    changes += timeline.length;
    const list = statusEvents.get(s.jobId) ?? [];
    events += list.length;
    const problem = (why: string, more: Record<string, unknown> = {}) =>
      failures.push({
        jobId: s.jobId,
        problem: why,
        ...more,
        timeline: timeline.map((t) => `${t.status}@${t.at}`),
        events: list.map((e) => `${e.previousStatus}→${e.status} ${e.kind} ${e.id}`),
      });
    if (!timelines.has(s.jobId)) {
      problem("timeline unreadable");
      continue;
    }
    for (const { kind, status, previousStatus, deliveredAt, readAt } of list) {
      const i = kinds.indexOf(kind);
      // A delivery's or read's event shows that time; the others show neither.
      const shown = kind === "delivered" || kind === "read" ? kind : null;
      if (i === -1) problem("an event for a change the record does not have", { kind });
      else if (
        status !== statuses[i] ||
        previousStatus !== (statuses[i - 1] ?? "queued") ||
        (readAt ? "read" : deliveredAt ? "delivered" : null) !== shown
      )
        problem("an event's content is not the record's as of its change", { kind, status, previousStatus });
    }
    for (const t of timeline) {
      if (list.some((e) => e.kind === t.status)) continue;
      const fail = (why: string) => problem(`a change ${why}`, { kind: t.status });
      const kill = lostAt(eventIdOf(s.jobId, t.status as OutboundChange), fail);
      if (kill !== null) lostAtKill[kill] = (lostAtKill[kill] ?? 0) + 1;
    }
  }

  let inboundOk = 0;
  let inboundLost = 0;
  for (const [wamid, sent] of injected) {
    const list = receivedEvents.get(wamid) ?? [];
    const fail = (why: string) =>
      failures.push({ problem: `inbound message ${why}`, wamid, events: list.map((e) => e.id) });
    if (list.length === 0) {
      if (lostAt(published.receivedByWamid.get(wamid), fail) !== null) inboundLost++;
    } else if (list.length > 1) fail("with several events");
    else if (list[0]?.from !== sent.from || list[0]?.text?.body !== sent.text) fail("whose event differs");
    else inboundOk++;
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
      inboundInjected: injected.size,
      inboundWithOneEvent: inboundOk,
      inboundLostWithQueue: inboundLost,
      neverPublished,
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
    else failures.push({ ...a, start: new Date(a.start).toISOString(), ms: a.end - a.start });
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
