import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ndjsonText } from "./helpers/ndjson";
import { api, call, expectError, json } from "./helpers/http";
import { createTenant, markTestContacts, type Tenant } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { historyStub } from "../src/durable-objects/history/history";
import { HOT_WINDOW_MS } from "../src/durable-objects/workspace/workspace";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import { utcDay, DAY_MS } from "../src/domain/job-id";
import { recordedEvents } from "./helpers/operator";
import { expectRuntimeLog } from "./helpers/runtime-log";

let clock = Date.UTC(2045, 2, 1, 10);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 100 * DAY_MS);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const hotCount = (t: Tenant) =>
  runInDurableObject(
    workspaceStub(env, t.workspaceId),
    (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n,
  );

/** Runs the workspace's alarm until its due steps are done (the tiering and archiving re-arm until finished). */
async function workspaceAlarms(t: Tenant, rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
}

/** Eight recipients (with createTenant's two, the ten test contacts a number may have; 5511000000001 is one of those). */
const recipient = (i: number) => `55110000000${[0, 2, 3, 4, 5, 6, 7, 8][i % 8] ?? 0}`;

/**
 * Sends `n` messages and drains them. The sandbox then reports each delivered and read, as the
 * operator would: applied here before the caller looks, or (`reports: false`) never sent, as for
 * a phone that stays off, so that a test can deliver its own late report.
 */
async function sendSome(t: Tenant, n: number, prefix: string, { reports = true } = {}): Promise<string[]> {
  await markTestContacts(t.numberId, ...Array.from({ length: Math.min(n, 8) }, (_, i) => recipient(i)));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    setClock(clock + 600);
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, `${prefix} ${i}`, recipient(i)));
    expect(res.status).toBe(201);
    ids.push((await json<{ jobId: string }>(res)).jobId);
  }
  for (let i = 0; i < n; i++) {
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    setClock(clock + 1_100);
  }
  if (!reports) {
    await runInDurableObject(
      channelNumberStub(env, t.numberId),
      (_, state) => void state.storage.sql.exec("DELETE FROM sandbox_reports"),
    );
    return ids;
  }
  // The delivered (2 s) and read (5 s) reports.
  setClock(clock + 6_000);
  for (let i = 0; i < 3; i++) await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  return ids;
}

const view = async (t: Tenant, id: string) => json<Record<string, unknown>>(await api(`/messages/${id}`, t.key));

describe("the hot window and history shards", () => {
  it("moves messages older than 48 hours to their day's shard; reads, lists and late reports keep working", async () => {
    const t = await createTenant();
    const old = await sendSome(t, 3, "old", { reports: false });
    const before = await Promise.all(old.map((id) => view(t, id)));
    expect(await hotCount(t)).toBe(3);

    setClock(clock + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    const recent = await sendSome(t, 1, "recent");
    await workspaceAlarms(t);
    expect(await hotCount(t)).toBe(1);
    const day = utcDay(Date.parse(String(before[0]!.createdAt)));
    expect(await historyStub(env, t.workspaceId, day).size()).toMatchObject({ messages: 3 });

    // The same records, by id and in the list (history after the hot rows, newest first).
    expect(await Promise.all(old.map((id) => view(t, id)))).toEqual(before);
    const listed = await json<{ data: { id: string }[] }>(await api("/messages", t.key));
    expect(listed.data.map((m) => m.id)).toEqual([...recent, ...[...old].reverse()]);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; nextCursor: string | null } = await json(
        await api(`/messages?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, t.key),
      );
      paged.push(...page.data.map((m) => m.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(paged).toEqual(listed.data.map((m) => m.id));

    // A read receipt days later reaches the record in its shard and announces it.
    await channelNumberStub(env, t.numberId).applyOperatorStatuses([
      {
        jobId: old[0]!,
        upstreamMessageId: `sandbox.${old[0]}`,
        status: "read",
        at: clock,
        errorCode: null,
        errorMessage: null,
      },
    ]);
    expect(await view(t, old[0]!)).toMatchObject({ status: "sent", readAt: new Date(clock).toISOString() });
    const events = await recordedEvents(workspaceStub(env, t.workspaceId), old[0]!);
    expect(events.at(-1)).toMatchObject({
      type: "message.status",
      data: { messageId: old[0], readAt: new Date(clock).toISOString() },
    });
  });
});

describe("retention and archives", () => {
  it("archives each day past the plan's window to R2, then deletes it; the archive holds exactly the records", async () => {
    const t = await createTenant(); // pro: 30 days
    const ids = await sendSome(t, 4, "archived");
    const records = await Promise.all(ids.map((id) => view(t, id)));
    const day = new Date(String(records[0]!.createdAt)).toISOString().slice(0, 10);

    setClock(clock + 31 * DAY_MS + 60_000);
    await workspaceAlarms(t, 20);
    const archives = await json<{ data: { day: string; messages: number }[] }>(await api("/message-archives", t.key));
    expect(archives.data).toEqual(
      [{ day, messages: 4, archivedAt: new Date(clock).toISOString() }].map(({ archivedAt, ...rest }) => ({
        ...rest,
        archivedAt: expect.any(String),
      })),
    );
    for (const id of ids) await expectError(await api(`/messages/${id}`, t.key), 404, "not_found");
    expect((await json<{ data: unknown[] }>(await api("/messages", t.key))).data).toEqual([]);

    const res = await api(`/message-archives/${day}`, t.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/x-ndjson; charset=utf-8");
    const lines = (await ndjsonText(res))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual(records);
    expect(await historyStub(env, t.workspaceId, utcDay(Date.parse(String(records[0]!.createdAt)))).size()).toEqual({
      messages: 0,
      bytes: expect.any(Number),
    });
  });

  it("a failure between writing the archive and deleting the rows loses nothing and duplicates nothing", async () => {
    const t = await createTenant();
    const ids = await sendSome(t, 3, "fragile");
    const records = await Promise.all(ids.map((id) => view(t, id)));
    const day = new Date(String(records[0]!.createdAt)).toISOString().slice(0, 10);
    setClock(clock + 31 * DAY_MS + 60_000);

    // The parts go to R2, then the manifest write fails: the day is not complete and nothing is deleted.
    const original = env.ARCHIVE.put.bind(env.ARCHIVE);
    const put = vi.spyOn(env.ARCHIVE, "put").mockImplementation(async (key, value, options) => {
      if (String(key).endsWith("manifest.json")) throw new Error("R2 unavailable");
      return original(key, value, options);
    });
    // The shard's failed call is reported by the runtime: expected here, captured and checked.
    const trace = await expectRuntimeLog(/R2 unavailable/);
    await workspaceAlarms(t, 3);
    await trace.seen();
    await trace.end();
    expect(put.mock.calls.some(([key]) => String(key).includes("part-"))).toBe(true);
    expect((await json<{ data: unknown[] }>(await api("/message-archives", t.key))).data).toEqual([]);
    expect(await Promise.all(ids.map((id) => view(t, id)))).toEqual(records);

    put.mockRestore();
    setClock(clock + 120_000);
    await workspaceAlarms(t, 5);
    const res = await api(`/message-archives/${day}`, t.key);
    const lines = (await ndjsonText(res))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string });
    expect(lines.map((l) => l.id)).toEqual(ids);
    expect(lines).toEqual(records);
  });

  it("one workspace's archives are never visible to another", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const ids = await sendSome(a, 1, "private");
    const day = new Date(String((await view(a, ids[0]!)).createdAt)).toISOString().slice(0, 10);
    setClock(clock + 31 * DAY_MS + 60_000);
    await workspaceAlarms(a, 10);
    expect((await api(`/message-archives/${day}`, a.key)).status).toBe(200);
    expect((await json<{ data: unknown[] }>(await api("/message-archives", b.key))).data).toEqual([]);
    await expectError(await api(`/message-archives/${day}`, b.key), 404, "not_found");
    await expectError(await api("/message-archives/2026-02-30", a.key), 404, "not_found");
    await expectError(await api("/message-archives/../../x", a.key), 404, "not_found");
    expect((await call(`/api/v1/message-archives/${day}`)).status).toBe(401);
  });
});

describe("the storage budget", () => {
  const counts = (t: Tenant) =>
    runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      const n = (q: string) => state.storage.sql.exec<{ n: number }>(q).one().n;
      return {
        messages: n("SELECT COUNT(*) AS n FROM messages"),
        events: n("SELECT COUNT(*) AS n FROM events"),
        attempts: n("SELECT COUNT(*) AS n FROM event_attempts"),
      };
    });

  it("an object over its budget keeps 6 hours of messages hot, settled events and delivery logs 1 hour, any event 6 hours", async () => {
    const tight = await createTenant();
    const roomy = await createTenant();
    const ids: Record<string, string[]> = {};
    for (const t of [tight, roomy]) {
      // Without the sandbox's delivered and read reports: the counts below are of the sends' own events.
      ids[t.workspaceId] = await sendSome(t, 2, "budget", { reports: false });
      await workspaceAlarms(t, 2);
    }
    // Both workspaces have no webhook: their events settle as soon as the consumer reports on them.
    const settled = (t: Tenant) =>
      runInDurableObject(
        workspaceStub(env, t.workspaceId),
        (_, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE delivered_at IS NOT NULL").one()
            .n,
      );
    for (const t of [tight, roomy])
      await vi.waitFor(async () => expect(await settled(t)).toBe(4), { timeout: 10_000, interval: 50 });
    for (const t of [tight, roomy]) {
      await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
        const sql = state.storage.sql;
        // One event still being retried for a failing webhook, and one delivery attempt in the log.
        sql.exec(
          "UPDATE events SET delivery = 'retrying', delivered_at = NULL WHERE rowid = (SELECT MAX(rowid) FROM events)",
        );
        sql.exec(
          "INSERT INTO event_attempts (seq, event_id, event_type, subject, webhook_id, attempt, attempted_at, outcome) VALUES (1, 'e', 'message.status', 's', 'w', 1, ?, 'failed')",
          clock,
        );
        if (t === tight) sql.exec("INSERT INTO meta (k, v) VALUES ('hot_bytes_budget', '1')");
      });
    }
    expect(await counts(tight)).toEqual({ messages: 2, events: 4, attempts: 1 });

    setClock(clock + 7 * 3_600_000);
    for (const t of [tight, roomy]) await workspaceAlarms(t, 6);
    expect(await counts(tight)).toEqual({ messages: 0, events: 0, attempts: 0 });
    expect(await counts(roomy)).toEqual({ messages: 2, events: 4, attempts: 1 });
    // Moved, not lost: the records read the same from their day's shard.
    for (const id of ids[tight.workspaceId]!) expect(await view(tight, id)).toMatchObject({ id, status: "sent" });
  });
});
