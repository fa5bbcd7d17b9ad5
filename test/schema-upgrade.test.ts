import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { createKey, createWorkspace } from "./helpers/fixtures";
import { accepted, connectCloudNumber, mockOperator, operatorError, type OperatorCall } from "./helpers/operator";
import { send, textMessage } from "./helpers/send";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { historyStub } from "../src/durable-objects/history/history";
import { schemaVersion } from "../src/durable-objects/shared/schema-version";
import { WORKSPACE_SCHEMA } from "../src/durable-objects/workspace/schema";
import { CHANNEL_NUMBER_SCHEMA } from "../src/durable-objects/channel-number/schema";
import { HISTORY_SCHEMA } from "../src/durable-objects/history/schema";
import { eventsOf, type WebhookQueueMessage } from "../src/domain/events";
import legacy from "./fixtures/schema-before-versions.json";

// Objects already in production were created before schema versions: their storage has no
// version row and the layout of the last release before them (the fixture is that release's
// sqlite_master). These tests put data in every state into exactly that layout, then let the
// current code start on it, and check that nothing is lost, changed or sent again.

interface SchemaEntry {
  type: string;
  name: string;
  sql: string;
}

let clock = Date.UTC(2049, 0, 1, 9);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(ms);
};

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 30 * 24 * 3_600_000);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const names = (sql: SqlStorage, type: "table" | "index") =>
  sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = ? AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
      type,
    )
    .toArray()
    .map((r) => r.name);

const columns = (sql: SqlStorage, table: string) =>
  sql
    .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .toArray()
    .map((r) => r.name);

const hasRowid = (sql: SqlStorage, table: string): boolean => {
  try {
    sql.exec(`SELECT rowid FROM ${table} LIMIT 1`).toArray();
    return true;
  } catch {
    return false;
  }
};

/**
 * Rewrites an object's storage into the layout of the release before versions: every table
 * rebuilt from that release's DDL with the rows it can hold (rowids kept: the event log's
 * order is its rowid), its indexes, and no version row.
 */
function toLayoutBeforeVersions(sql: SqlStorage, entries: SchemaEntry[]): void {
  for (const index of names(sql, "index")) sql.exec(`DROP INDEX ${index}`);
  const legacyTables = entries.filter((e) => e.type === "table");
  for (const table of names(sql, "table")) {
    if (!legacyTables.some((t) => t.name === table)) sql.exec(`DROP TABLE ${table}`);
  }
  for (const t of legacyTables) {
    if (!names(sql, "table").includes(t.name)) {
      sql.exec(t.sql);
      continue;
    }
    const keepRowid = hasRowid(sql, t.name);
    sql.exec(`ALTER TABLE ${t.name} RENAME TO upgrade_source`);
    sql.exec(t.sql);
    const shared = columns(sql, "upgrade_source").filter((c) => columns(sql, t.name).includes(c));
    const cols = [...(keepRowid && hasRowid(sql, t.name) ? ["rowid"] : []), ...shared];
    sql.exec(`INSERT INTO ${t.name} (${cols.join(", ")}) SELECT ${cols.join(", ")} FROM upgrade_source`);
    sql.exec("DROP TABLE upgrade_source");
  }
  for (const i of entries.filter((e) => e.type === "index")) sql.exec(i.sql);
}

const latest = (steps: readonly { version: number }[]) => steps[steps.length - 1]!.version;

describe("objects created before schema versions upgrade in place", () => {
  it("a workspace and a number with messages in every state: nothing lost, nothing sent again, unpublished events published once", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectCloudNumber(workspaceId);
    const pausedNumber = await connectCloudNumber(workspaceId);
    const calls: OperatorCall[] = mockOperator((call) => {
      const text = call.body.text.body;
      if (text === "held") return operatorError(401, 190, "Error validating access token");
      if (text === "refused") return operatorError(400, 131026, "Message undeliverable");
      if (text === "lost") return new Response("Bad Gateway", { status: 502 });
      return accepted(`wamid.${call.body.biz_opaque_callback_data}`);
    });
    const sendText = async (text: string, to: string, numberId = number.numberId) => {
      setClock(clock + 1_000); // the number admits 2 a second
      const res = await send(key, `key-${text}`, textMessage(numberId, text, to));
      expect(res.status).toBe(201);
      return (await json<{ jobId: string }>(res)).jobId;
    };
    const drain = async () => {
      for (let i = 0; i < 6; i++) {
        setClock(clock + 1_100);
        await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
        await runDurableObjectAlarm(channelNumberStub(env, pausedNumber.numberId));
      }
    };

    // sent, failed, outcome unknown: called once each.
    const sent = await sendText("sent", "5511900000001");
    const refused = await sendText("refused", "5511900000002");
    const lost = await sendText("lost", "5511900000003");
    // held: its number paused on an account-level refusal (nothing was sent), the message waits.
    const held = await sendText("held", "5511900000007", pausedNumber.numberId);
    await drain();
    expect(calls.map((c) => c.body.text.body).sort()).toEqual(["held", "lost", "refused", "sent"]);
    expect((await channelNumberStub(env, pausedNumber.numberId).sendingState()).paused).toMatchObject({
      upstreamCode: "190",
    });
    await runDurableObjectAlarm(workspaceStub(env, workspaceId)); // their events are published
    // queued (never called yet), and one whose call a crash cut short (`sending`).
    const queued = await sendText("queued", "5511900000004");
    const cut = await sendText("cut short", "5511900000005");
    // (What the drain does before a call: the workspace's claim, then `sending`; then the crash.)
    await workspaceStub(env, workspaceId).applyStatus({ jobId: cut, status: "processing", at: clock });
    await runInDurableObject(channelNumberStub(env, number.numberId), (_, state) => {
      state.storage.sql.exec(
        "UPDATE outbox SET state = 'sending', attempts = 1, first_attempt_at = ? WHERE job_id = ?",
        clock,
        cut,
      );
    });
    // An inbound message, whose event is not published yet.
    await workspaceStub(env, workspaceId).recordInbound(workspaceId, [
      {
        channelNumberId: number.numberId,
        upstreamMessageId: "wamid.IN1",
        from: "5511900000006",
        type: "text",
        text: "hi",
        content: null,
        at: clock,
      },
    ]);
    const ids = [sent, refused, lost, queued, cut, held];
    const view = async (id: string) => json<Record<string, unknown>>(await api(`/messages/${id}`, key));
    const before = await Promise.all(ids.map(view));
    expect(before.map((m) => m.status)).toEqual(["sent", "failed", "processing", "queued", "processing", "processing"]);
    const eventsBefore = await runInDurableObject(workspaceStub(env, workspaceId), (_, state) =>
      state.storage.sql
        .exec<{ id: string; published: number }>(
          "SELECT id, rowid <= (SELECT CAST(v AS INTEGER) FROM meta WHERE k = 'events_published_through') AS published FROM events ORDER BY rowid",
        )
        .toArray(),
    );
    const unpublished = eventsBefore.filter((e) => !e.published).map((e) => e.id);
    expect(unpublished.length).toBeGreaterThan(0);

    // The storage as the release before versions left it.
    // (Each object is evicted at once: a live instance must not run on storage changed under it.)
    const rewritten = await runInDurableObject(workspaceStub(env, workspaceId), (_, state) => {
      toLayoutBeforeVersions(state.storage.sql, legacy.objects.workspace);
      return schemaVersion(state.storage.sql);
    });
    expect(rewritten).toBe(0);
    await evictDurableObject(workspaceStub(env, workspaceId));
    for (const n of [number, pausedNumber]) {
      await runInDurableObject(channelNumberStub(env, n.numberId), (_, state) =>
        toLayoutBeforeVersions(state.storage.sql, legacy.objects.number),
      );
      await evictDurableObject(channelNumberStub(env, n.numberId));
    }

    // Started again on it: the current schema, the same records.
    expect(await Promise.all(ids.map(view))).toEqual(before);
    expect(
      await runInDurableObject(workspaceStub(env, workspaceId), (_, state) => schemaVersion(state.storage.sql)),
    ).toBe(latest(WORKSPACE_SCHEMA));
    expect(
      await runInDurableObject(channelNumberStub(env, number.numberId), (_, state) => schemaVersion(state.storage.sql)),
    ).toBe(latest(CHANNEL_NUMBER_SCHEMA));

    // The number calls only the queued message; the one cut short is an unknown outcome, never called again.
    // The paused number stays paused, its message waiting.
    const callsBefore = calls.map((c) => c.body.biz_opaque_callback_data);
    await drain();
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([...callsBefore, queued]);
    expect((await channelNumberStub(env, pausedNumber.numberId).sendingState()).paused).toMatchObject({
      upstreamCode: "190",
    });
    const after = await Promise.all(ids.map(view));
    expect(after.map((m) => m.status)).toEqual(["sent", "failed", "processing", "sent", "processing", "processing"]);
    expect(after[4]).toMatchObject({ outcomeUnknownSince: expect.any(String) });

    // Events recorded before the upgrade that were not published yet go out once; none is lost.
    const published = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    const batches = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
    setClock(clock + 1_000);
    await runDurableObjectAlarm(workspaceStub(env, workspaceId));
    const out = [
      ...published.mock.calls.flatMap(([body]) => eventsOf(body as WebhookQueueMessage)),
      ...batches.mock.calls.flatMap(([items]) => [...items].flatMap((i) => eventsOf(i.body as WebhookQueueMessage))),
    ].map((e) => e.id);
    for (const id of unpublished) expect(out.filter((o) => o === id)).toHaveLength(1);
    const eventsAfter = await runInDurableObject(workspaceStub(env, workspaceId), (_, state) =>
      state.storage.sql
        .exec<{ id: string }>("SELECT id FROM events ORDER BY rowid")
        .toArray()
        .map((r) => r.id),
    );
    expect(eventsAfter.slice(0, eventsBefore.length)).toEqual(eventsBefore.map((e) => e.id));

    // Idempotency keys were kept: a retry is a duplicate, not a new message.
    const replay = await send(key, "key-sent", textMessage(number.numberId, "sent", "5511900000001"));
    expect(replay.status).toBe(200);
    expect(calls).toHaveLength(5);
  }, 60_000);

  it("a history shard holding a day upgrades; an empty or dropped one stays without tables", async () => {
    const workspaceId = crypto.randomUUID();
    const shard = historyStub(env, workspaceId, 20_000);
    const empty = historyStub(env, workspaceId, 20_001);
    // Nothing was ever moved to `empty`: reading it creates nothing.
    expect(await empty.get(crypto.randomUUID())).toBeNull();
    expect(await runInDurableObject(empty, (_, state) => names(state.storage.sql, "table"))).toEqual([]);

    await runInDurableObject(shard, (_, state) => {
      for (const t of legacy.objects.history) state.storage.sql.exec(t.sql);
      state.storage.sql.exec(
        `INSERT INTO messages (id, channel_number_id, recipient, body, status, created_at, updated_at, version, copy_pending, direction, type)
         VALUES ('0189b6d2-0000-7000-8000-000000000001', 'n', '5511900000001', 'kept', 'sent', 1, 1, 1, 0, 'outbound', 'text')`,
      );
      state.storage.sql.exec("INSERT INTO meta (k, v) VALUES ('workspace_id', ?), ('day', '20000')", workspaceId);
    });
    await evictDurableObject(shard);
    expect(await shard.get("0189b6d2-0000-7000-8000-000000000001")).toMatchObject({ body: "kept", status: "sent" });
    expect(await runInDurableObject(shard, (_, state) => schemaVersion(state.storage.sql))).toBe(
      latest(HISTORY_SCHEMA),
    );

    await shard.drop();
    expect(await shard.get("0189b6d2-0000-7000-8000-000000000001")).toBeNull();
    await evictDurableObject(shard);
    expect(await shard.list({}, null, 10, 100)).toEqual({ rows: [], next: null, scanned: 0 });
    expect(await runInDurableObject(shard, (_, state) => names(state.storage.sql, "table"))).toEqual([]);
  });
});
