import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { liveNumberTenant, mockOperator } from "../helpers/operator";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { fakeClockPerTest } from "../helpers/clock";
import { createTenant } from "../helpers/fixtures";
import { testWorkspace } from "../helpers/objects";
import { firstSlot, seededId, seedSlot, seedStorage } from "../fixtures/bulk-rows";
import { slotStart } from "../../src/durable-objects/workspace/day-tables";
import { noteUnknown, UNKNOWN_OUTCOME_WINDOW_MS } from "../../src/durable-objects/workspace/unknown-outcomes";
import { WORKSPACE_SCHEMA } from "../../src/durable-objects/workspace/schema";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { DAY_MS, utcDay } from "../../src/lib/job-id";

// A future clock: the objects' alarms fire only when the test runs them.
const clock = fakeClockPerTest(Date.UTC(2041, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** Whether `p` settles within `ms` of real time. */
const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe("unknown outcomes when events are packed (EVENT_PUBLISH_DELAY_MS > 0, as in production)", () => {
  it("the alarm that fails an expired unknown outcome publishes its event and ends, with no other call into the object", async () => {
    // Found by `npm run soak`: the expiry step waited for the publisher's next flush, which only the
    // next alarm (or a call into the object) makes; the next alarm never starts while this one runs, so
    // once the load stopped the message's `failed` event never left and the alarm never ended: the
    // next unknown outcomes of the workspace stayed `processing` for good.
    const vars = env as unknown as Record<string, string>;
    const before = { delay: vars.EVENT_PUBLISH_DELAY_MS, window: vars.UNKNOWN_OUTCOME_WINDOW_MS };
    vars.EVENT_PUBLISH_DELAY_MS = "1000";
    vars.UNKNOWN_OUTCOME_WINDOW_MS = "60000";
    try {
      // Objects created now read these vars in their constructors.
      const t = await liveNumberTenant();
      const calls = mockOperator(() => Promise.reject(new TypeError("Network connection lost.")));
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", "5511999998888"));
      expect(res.status).toBe(201);
      const { jobId } = await json<{ jobId: string }>(res);
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
      expect(calls).toHaveLength(1);
      // The packed events of the claim and its answer leave with the workspace's next alarm.
      clock.advance(1_000);
      await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
      expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
        status: "processing",
        outcomeUnknownSince: expect.any(String),
      });

      clock.advance(60_000);
      const ran = settlesWithin(runDurableObjectAlarm(workspaceStub(env, t.workspaceId)), 5_000);
      expect(await ran).toBe(true);
      expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
        status: "failed",
        error: { code: "upstream_outcome_unknown" },
      });
      expect(calls).toHaveLength(1);
    } finally {
      vars.EVENT_PUBLISH_DELAY_MS = before.delay!;
      vars.UNKNOWN_OUTCOME_WINDOW_MS = before.window!;
    }
  });
});

/**
 * A day's records whose outcomes became unknown: 100 accepted at 00:00 and held until 20:00 (their
 * calls made then, their answers lost), and one accepted at 06:00 and lost at once: its window
 * ends 14 hours before theirs, although its id comes after theirs.
 */
async function heldAndLate(workspaceId: string, numberId: string): Promise<{ late: string; lateSince: number }> {
  const day = utcDay(clock.now()) - 1;
  const slot = firstSlot(day);
  const heldSince = day * DAY_MS + 20 * 3_600_000;
  const lateSince = slotStart(slot + 1) + 1;
  await seedStorage(workspaceStub(env, workspaceId), (sql) => {
    seedSlot(sql, slot, numberId, { status: "processing", unknownSince: heldSince }, "011", 100);
    for (let i = 1; i <= 100; i++)
      noteUnknown(sql, seededId(slotStart(slot), "011", i), heldSince + i, { number: numberId, recipient: "x" });
    seedSlot(sql, slot + 1, numberId, { status: "processing", unknownSince: lateSince - 1 }, "012", 1);
    noteUnknown(sql, seededId(slotStart(slot + 1), "012", 1), lateSince, { number: numberId, recipient: "y" });
  });
  return { late: seededId(slotStart(slot + 1), "012", 1), lateSince };
}

/** Runs the workspace's alarm at the end of an unknown outcome's window (and the steps' slack). */
async function expiryOf(workspaceId: string, since: number): Promise<void> {
  clock.set(since + UNKNOWN_OUTCOME_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
  await testWorkspace(workspaceId).armAlarm();
  await runDurableObjectAlarm(workspaceStub(env, workspaceId));
}

describe("unknown outcomes expire in the order their windows end", () => {
  it("an outcome unknown since 06:00 fails 7 days later, although 100 with earlier ids became unknown only at 20:00", async () => {
    const t = await createTenant();
    const { late, lateSince } = await heldAndLate(t.workspaceId, t.numberId);
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    await expiryOf(t.workspaceId, lateSince);
    const ws = testWorkspace(t.workspaceId);
    expect(await ws.storedRecord(late)).toMatchObject({ status: "failed", error_code: "upstream_outcome_unknown" });
    // The others' windows are still open: none failed.
    const held = seededId(slotStart(firstSlot(utcDay(lateSince))), "011", 1);
    expect(await ws.storedRecord(held)).toMatchObject({ status: "processing" });
  });

  it("a workspace whose list was written before its `since` index (schema step 2) upgrades in place and expires in that order; one without a list stays without", async () => {
    const withList = await createTenant();
    const without = await createTenant();
    const { late, lateSince } = await heldAndLate(withList.workspaceId, withList.numberId);
    // Storage as the release before the `since` step left it: the list without its index, the version before it.
    const earlier = WORKSPACE_SCHEMA.steps.find((s) => s.description.includes("by `since`"))!.version - 1;
    const asBefore = (workspaceId: string, dropIndex: boolean) =>
      runInDurableObject(workspaceStub(env, workspaceId), (_, state) => {
        if (dropIndex) state.storage.sql.exec("DROP INDEX unknowns_by_since");
        state.storage.sql.exec("UPDATE meta SET v = ? WHERE k = 'schema_version'", String(earlier));
      });
    await asBefore(withList.workspaceId, true);
    await asBefore(without.workspaceId, false);
    for (const t of [withList, without]) {
      await evictDurableObject(workspaceStub(env, t.workspaceId));
      expect(await testWorkspace(t.workspaceId).schemaVersion()).toBe(WORKSPACE_SCHEMA.steps.length);
    }
    expect(await testWorkspace(without.workspaceId).tableNames()).not.toContain("unknowns");
    const indexes = await runInDurableObject(workspaceStub(env, withList.workspaceId), (_, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'unknowns'")
        .toArray()
        .map((r) => r.name),
    );
    expect(indexes).toContain("unknowns_by_since");
    await expiryOf(withList.workspaceId, lateSince);
    expect(await testWorkspace(withList.workspaceId).storedRecord(late)).toMatchObject({ status: "failed" });
  });
});
