import { describe, expect, it } from "vitest";
import { nextMove, type DrainMove, type DrainState } from "../../../../src/durable-objects/channel-number/next-move";

const NOW = 1_000_000;
const base: DrainState = {
  heldUntil: 0,
  hasDueHead: false,
  slot: NOW,
  nextHeadAt: null,
  callsInFlight: 0,
  maxCallsInFlight: 6,
  startedAt: NOW,
  slept: 0,
  sessionMs: 0,
};

const cases: [string, Partial<DrainState>, DrainMove][] = [
  ["a due head and a free slot: start its call", { hasDueHead: true }, { kind: "start" }],
  [
    "a due head, a free slot, calls in flight below the limit: start",
    { hasDueHead: true, callsInFlight: 5 },
    { kind: "start" },
  ],
  [
    "a due head, a free slot, the runtime's limit of calls in flight: wait for an answer",
    { hasDueHead: true, callsInFlight: 6 },
    { kind: "await-answer" },
  ],
  ["a due head, the slot later, no session time: end", { hasDueHead: true, slot: NOW + 505 }, { kind: "end" }],
  [
    "a due head, the slot later, within the session: sleep until the slot",
    { hasDueHead: true, slot: NOW + 505, sessionMs: 10_000 },
    { kind: "sleep", ms: 505 },
  ],
  [
    "held: no call even with a due head and a free slot (end without session time)",
    { heldUntil: NOW + 1, hasDueHead: true },
    { kind: "end" },
  ],
  [
    "held, within the session: sleep until the hold ends",
    { heldUntil: NOW + 2_000, hasDueHead: true, sessionMs: 10_000 },
    { kind: "sleep", ms: 2_000 },
  ],
  [
    "held past the session's end: end",
    { heldUntil: NOW + 20_000, hasDueHead: true, sessionMs: 10_000 },
    { kind: "end" },
  ],
  [
    "no due head, the next one due within the session: sleep until it",
    { nextHeadAt: NOW + 300, sessionMs: 10_000 },
    { kind: "sleep", ms: 300 },
  ],
  [
    "no due head, the next one due now (a rounding race): sleep at least 1 ms",
    { nextHeadAt: NOW, sessionMs: 10_000 },
    { kind: "sleep", ms: 1 },
  ],
  [
    "no work at all, calls in flight: wait for an answer (it can make a successor due)",
    { callsInFlight: 2 },
    { kind: "await-answer" },
  ],
  ["no work at all, nothing in flight: end", {}, { kind: "end" }],
  [
    "work later, calls in flight, no session time: end (the alarm comes back; answers are awaited by the session's end)",
    { nextHeadAt: NOW + 5_000, callsInFlight: 2 },
    { kind: "end" },
  ],
  [
    "the session has slept most of its time: a wait past its budget ends it",
    { hasDueHead: true, slot: NOW + 505, sessionMs: 10_000, slept: 9_600 },
    { kind: "end" },
  ],
  [
    "the session started long ago: a wait past its budget ends it",
    { hasDueHead: true, slot: NOW + 505, sessionMs: 10_000, startedAt: NOW - 9_700 },
    { kind: "end" },
  ],
  ["a hold that has just ended does not hold", { heldUntil: NOW, hasDueHead: true }, { kind: "start" }],
];

describe("the drain's next move", () => {
  it.each(cases)("%s", (_, state, move) => {
    expect(nextMove({ ...base, ...state }, NOW)).toEqual(move);
  });
});
