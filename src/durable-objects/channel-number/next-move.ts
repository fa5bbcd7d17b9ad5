/**
 * The drain session's decision of its next move, as a pure function of what it
 * knows at `now` (drain.ts gathers the state, then does what this says).
 */
export interface DrainState {
  /** The number is held (throttled or paused) until then; no call before. */
  heldUntil: number;
  /** Whether a due head is waiting (read only when the number is not held). */
  hasDueHead: boolean;
  /** The pace's next free slot (`nextCallAt`). */
  slot: number;
  /** When the next head is due, read only when the number is neither held nor has a due head; null: no work. */
  nextHeadAt: number | null;
  callsInFlight: number;
  maxCallsInFlight: number;
  /** When the session started, how long it has slept, and how long it may keep the alarm. */
  startedAt: number;
  slept: number;
  sessionMs: number;
}

export type DrainMove =
  /** Start a call for the due head. */
  | { kind: "start" }
  /** Wait for one of the calls in flight to answer (the runtime's limit, or nothing else to do). */
  | { kind: "await-answer" }
  /** Sleep within the session until the next slot, due head or end of the hold. */
  | { kind: "sleep"; ms: number }
  /** End the session; the alarm starts the next one. */
  | { kind: "end" };

export function nextMove(s: DrainState, now: number): DrainMove {
  const held = s.heldUntil > now;
  const ready = !held && s.hasDueHead;
  if (ready && s.slot <= now) {
    // Beyond the runtime's limit of responses an object may wait on, a request is queued: it would
    // leave later than its slot, outside the pace. Wait for an answer instead.
    return s.callsInFlight >= s.maxCallsInFlight ? { kind: "await-answer" } : { kind: "start" };
  }
  const next = held ? s.heldUntil : ready ? s.slot : s.nextHeadAt;
  const wait = next === null ? null : Math.max(1, next - now);
  if (wait !== null && s.slept + wait <= s.sessionMs && now - s.startedAt + wait <= s.sessionMs)
    return { kind: "sleep", ms: wait };
  // Nothing else is due: a finished call can make the next message of its conversation due.
  if (wait === null && s.callsInFlight > 0) return { kind: "await-answer" };
  // The session's time is up with work still due (or there is none): waiting on answers here would
  // pace the number by the operator's latency instead of by the pace.
  return { kind: "end" };
}
