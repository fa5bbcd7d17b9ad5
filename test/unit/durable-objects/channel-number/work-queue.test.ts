import { describe, expect, it } from "vitest";
import { WorkQueue, type Entry } from "../../../../src/durable-objects/channel-number/work-queue";

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

  it("orders by acceptance time even where the jobIds do not (entries of the earlier layout)", () => {
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
