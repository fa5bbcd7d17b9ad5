import { describe, expect, it } from "vitest";
import { WorkQueue, type Entry } from "../../../../src/durable-objects/channel-number/work-queue";
import { newJobId } from "../../../../src/lib/job-id";

const entry = (jobId: string, recipient: string, acceptedAt: number, state: Entry["state"] = "queued"): Entry => ({
  jobId,
  workspaceId: "ws",
  recipient,
  acceptedAt,
  attempts: 0,
  nextAttemptAt: acceptedAt,
  state,
});

describe("WorkQueue", () => {
  it("keeps each conversation in acceptance order and offers only its head", () => {
    const q = new WorkQueue();
    q.add(entry("b", "r1", 20));
    q.add(entry("a", "r1", 10)); // a reloaded entry older than what is there
    q.add(entry("c", "r2", 30));
    expect(q.nextDue(100)?.jobId).toBe("a");
    q.get("a")!.state = "calling";
    // r1's next entry waits for its head's answer; r2's head goes.
    expect(q.nextDue(100)?.jobId).toBe("c");
    q.remove("a");
    expect(q.nextDue(100)?.jobId).toBe("b");
  });

  it("the held bound: the oldest queued entries by acceptance, passing those being called, stopping at the first later", () => {
    const q = new WorkQueue();
    q.add(entry("j1", "r1", 10, "calling"));
    q.add(entry("j2", "r2", 20));
    q.add(entry("j3", "r1", 30));
    q.add(entry("j4", "r3", 40));
    expect(q.oldestQueuedAt()).toBe(20);
    expect(q.queuedAcceptedBy(30, 10).map((e) => e.jobId)).toEqual(["j2", "j3"]);
    expect(q.queuedAcceptedBy(40, 1).map((e) => e.jobId)).toEqual(["j2"]);
    expect(q.queuedAcceptedBy(19, 10)).toEqual([]);
  });

  it("orders by acceptance time even where the jobIds do not", () => {
    const q = new WorkQueue();
    q.add(entry("zzz", "r1", 10));
    q.add(entry("aaa", "r2", 20));
    expect(q.queuedAcceptedBy(15, 10).map((e) => e.jobId)).toEqual(["zzz"]);
    expect(q.oldestQueuedAt()).toBe(10);
  });

  it("an entry removed and added again (a reload) is counted once", () => {
    const q = new WorkQueue();
    q.add(entry("j1", "r1", 10));
    q.add(entry("j2", "r1", 20));
    q.remove("j1");
    q.add(entry("j1", "r1", 10));
    expect(q.queuedAcceptedBy(100, 10).map((e) => e.jobId)).toEqual(["j1", "j2"]);
    expect(q.size).toBe(2);
  });

  it("drops removed entries from its order as the front passes them, whatever their number", () => {
    const q = new WorkQueue();
    for (let i = 0; i < 5_000; i++) q.add(entry(`j${String(i).padStart(5, "0")}`, `r${i % 7}`, i));
    for (let i = 0; i < 4_000; i++) q.remove(`j${String(i).padStart(5, "0")}`);
    expect(q.oldestQueuedAt()).toBe(4_000);
    q.add(entry("late", "r1", 3_999));
    expect(q.oldestQueuedAt()).toBe(3_999);
    expect(q.queuedAcceptedBy(4_001, 10).map((e) => e.jobId)).toEqual(["late", "j04000", "j04001"]);
    expect(q.size).toBe(1_001);
  });
});

const T0 = Date.UTC(2050, 0, 1);

/** An entry accepted at `acceptedAt` (its jobId a UUIDv7 of that time, as the workspace makes it). */
function acceptedEntry(recipient: string, acceptedAt: number, over: Partial<Entry> = {}): Entry {
  return {
    jobId: newJobId(acceptedAt),
    workspaceId: "w",
    recipient,
    acceptedAt,
    attempts: 0,
    nextAttemptAt: acceptedAt,
    state: "queued",
    ...over,
  };
}

/** Takes every due head, one at a time, as the drain would (the head leaves once called). */
function callOrder(q: WorkQueue, at: number): string[] {
  const out: string[] = [];
  for (let e = q.nextDue(at); e; e = q.nextDue(at)) {
    out.push(e.jobId);
    q.remove(e.jobId);
  }
  return out;
}

describe("per-recipient order", () => {
  it("each conversation is called in acceptance order, also when an older entry is added later (a reload)", () => {
    const q = new WorkQueue();
    const a1 = acceptedEntry("A", T0 + 1);
    const a2 = acceptedEntry("A", T0 + 2);
    const a3 = acceptedEntry("A", T0 + 3);
    // The newest was admitted first; the older ones come back from the workspace's records afterwards.
    q.add(a3);
    q.add(a1);
    q.add(a2);
    expect(q.size).toBe(3);
    expect(callOrder(q, T0 + 10)).toEqual([a1.jobId, a2.jobId, a3.jobId]);
    expect(q.size).toBe(0);
  });

  it("only a conversation's head may be called: the entry behind a head being called or waiting on a retry waits", () => {
    const q = new WorkQueue();
    const head = acceptedEntry("A", T0 + 1, { state: "calling" });
    const behind = acceptedEntry("A", T0 + 2);
    const other = acceptedEntry("B", T0 + 3);
    for (const e of [head, behind, other]) q.add(e);
    expect(q.nextDue(T0 + 10)?.jobId).toBe(other.jobId);
    q.remove(other.jobId);
    expect(q.nextDue(T0 + 10)).toBeUndefined();
    expect(q.nextDueAt()).toBeNull();
    // Its call answered with a retry a minute later: the head waits, and so does the entry behind it.
    head.state = "queued";
    head.nextAttemptAt = T0 + 60_000;
    expect(q.nextDue(T0 + 10)).toBeUndefined();
    expect(q.nextDueAt()).toBe(T0 + 60_000);
    expect(q.nextDue(T0 + 60_000)?.jobId).toBe(head.jobId);
    q.remove(head.jobId);
    expect(q.nextDue(T0 + 60_000)?.jobId).toBe(behind.jobId);
  });

  it("a second entry under a jobId already queued is ignored", () => {
    const q = new WorkQueue();
    const e = acceptedEntry("A", T0);
    q.add(e);
    q.add({ ...e, recipient: "B", nextAttemptAt: T0 - 1 });
    expect(q.size).toBe(1);
    expect(q.get(e.jobId)?.recipient).toBe("A");
    expect(q.remove("no-such-job")).toBeUndefined();
    expect(q.remove(e.jobId)).toBe(e);
    expect(q.has(e.jobId)).toBe(false);
  });
});

describe("due heads", () => {
  it("the next is the earliest due, then the oldest; heads not due yet or not allowed are passed over", () => {
    const q = new WorkQueue();
    const late = acceptedEntry("A", T0 + 1, { nextAttemptAt: T0 + 5_000 });
    const old = acceptedEntry("B", T0 + 2);
    const young = acceptedEntry("C", T0 + 3);
    const sameDue = acceptedEntry("D", T0 + 4, { nextAttemptAt: T0 + 2 });
    for (const e of [young, sameDue, late, old]) q.add(e);
    // B and D are due at T0 + 2: B was accepted first.
    expect(q.nextDue(T0 + 10)?.jobId).toBe(old.jobId);
    // A filter (the pair pace) passes B over.
    expect(q.nextDue(T0 + 10, (e) => e.recipient !== "B")?.jobId).toBe(sameDue.jobId);
    expect(q.nextDue(T0 + 1)).toBeUndefined();
    expect(callOrder(q, T0 + 10)).toEqual([old.jobId, sameDue.jobId, young.jobId]);
    expect(q.nextDueAt()).toBe(T0 + 5_000);
    // `notBefore` moves a head's time (the pair pace's readiness).
    expect(q.nextDueAt((e) => e.nextAttemptAt + 1_000)).toBe(T0 + 6_000);
    expect(callOrder(q, T0 + 5_000)).toEqual([late.jobId]);
    expect(q.nextDueAt()).toBeNull();
  });
});

describe("the held bound's listing", () => {
  it("lists queued entries accepted by a time, oldest first and bounded, heads or not, never one being called", () => {
    const q = new WorkQueue();
    const a1 = acceptedEntry("A", T0 + 1);
    const a2 = acceptedEntry("A", T0 + 2);
    const b1 = acceptedEntry("B", T0 + 3, { state: "calling" });
    const b2 = acceptedEntry("B", T0 + 4);
    const c1 = acceptedEntry("C", T0 + 9);
    for (const e of [c1, b2, a2, b1, a1]) q.add(e);
    expect(q.oldestQueuedAt()).toBe(T0 + 1);
    expect(q.queuedAcceptedBy(T0 + 4, 100).map((e) => e.jobId)).toEqual([a1.jobId, a2.jobId, b2.jobId]);
    expect(q.queuedAcceptedBy(T0 + 4, 2).map((e) => e.jobId)).toEqual([a1.jobId, a2.jobId]);
    expect(q.queuedAcceptedBy(T0, 100)).toEqual([]);
    q.remove(a1.jobId);
    q.remove(a2.jobId);
    // The entry being called is not "queued": the oldest waiting one is b2.
    expect(q.oldestQueuedAt()).toBe(T0 + 4);
    q.remove(b2.jobId);
    q.remove(c1.jobId);
    expect(q.oldestQueuedAt()).toBeNull();
  });
});
