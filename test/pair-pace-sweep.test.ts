import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createTenant } from "./helpers/fixtures";
import { channelNumberStub } from "../src/durable-objects/stubs";
import { SWEEP_BATCH, sweepIdlePairs } from "../src/durable-objects/channel-number/pair-pace";

it("the pair-pace sweep deletes the buckets full again, a page of keys at a time, and keeps the others", async () => {
  const t = await createTenant();
  const stub = channelNumberStub(env, t.numberId);
  await stub.noteInbound(t.numberId, [{ from: "5511000000000", at: Date.now() }]);
  await runInDurableObject(stub, (_, state) => {
    const sql = state.storage.sql;
    const at = 1_000_000;
    const n = SWEEP_BATCH + 10;
    // Every other bucket is full again (tat in the past); the others still constrain their recipient.
    state.storage.transactionSync(() => {
      for (let i = 0; i < n; i++)
        sql.exec(
          "INSERT INTO pair_pace (recipient, tat) VALUES (?, ?)",
          `55${String(i).padStart(9, "0")}`,
          i % 2 === 0 ? at - 1 : at + 6_000,
        );
    });
    let cursor = sweepIdlePairs(sql, at, "");
    expect(cursor).not.toBe("");
    cursor = sweepIdlePairs(sql, at, cursor);
    expect(cursor).toBe("");
    const left = sql.exec<{ recipient: string; tat: number }>("SELECT recipient, tat FROM pair_pace").toArray();
    expect(left).toHaveLength(n / 2);
    expect(left.every((r) => r.tat > at)).toBe(true);
    expect(sql.exec("SELECT name FROM sqlite_master WHERE name = 'pair_pace_by_tat'").toArray()).toEqual([]);
  });
});
