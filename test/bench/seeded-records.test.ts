import { describe, expect, it } from "vitest";
import { api, json } from "../helpers/http";
import { connectSandboxNumber, createTenant } from "../helpers/fixtures";
import { fakeClock } from "../helpers/clock";
import { testWorkspace } from "../helpers/objects";
import { RATE_WINDOW_MARGIN_MS, SEED_SPAN_MS, type Seeded, type SeedChunk } from "../../bench/seed";

interface Page {
  data: { id: string; status: string; channelNumberId: string; direction: string; createdAt: string }[];
  nextCursor: string | null;
}

const page = async (key: string, query: string): Promise<Page> => {
  const res = await api(`/messages?${query}`, key);
  expect(res.status).toBe(200);
  return json<Page>(res);
};

// `npm run bench` measures GET /messages on a workspace seeded by bench/seed.ts: what it seeds
// must be what the API lists, as the bench checks each answer against the seed's own account.
describe("the bench's seeded records", () => {
  it("are listed by the API as the seed says: newest first, filtered, and after a cursor", async () => {
    const at = Date.UTC(2045, 2, 3, 12);
    fakeClock(at);
    const t = await createTenant();
    const other = await connectSandboxNumber(t.workspaceId, "15550002222");
    const stub = testWorkspace(t.workspaceId);
    const base = { workspaceId: t.workspaceId, numberIds: [t.numberId, other], count: 1_200, now: at };
    const chunks: SeedChunk[] = [
      { ...base, from: 0, to: 700 },
      { ...base, from: 700, to: 1_200 },
    ];
    const results = [];
    for (const chunk of chunks) results.push(await stub.seedBenchRecords(chunk));

    const shapes = results.map((r) => Object.values(r.shapes).reduce((a, b) => a + b, 0));
    expect(shapes).toEqual([700, 500]);
    const seeded: Seeded[] = results.at(-1)!.tail;
    const newestFirst = [...seeded].sort((a, b) => (a.id < b.id ? 1 : -1));
    const sentOn = newestFirst.filter((m) => m.status === "sent" && m.channelNumberId === other);

    const first = await page(t.key, "limit=20");
    expect(first.data.map((m) => m.id)).toEqual(newestFirst.slice(0, 20).map((m) => m.id));
    expect(first.data.map((m) => m.status)).toEqual(newestFirst.slice(0, 20).map((m) => m.status));
    const second = await page(t.key, `limit=20&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(second.data.map((m) => m.id)).toEqual(newestFirst.slice(20, 40).map((m) => m.id));
    const filtered = await page(t.key, `limit=20&status=sent&channelNumberId=${other}`);
    expect(filtered.data.map((m) => m.id)).toEqual(sentOn.slice(0, 20).map((m) => m.id));

    // Every record is settled, inside the span, and older than the rate window: nothing to send or count against a limit.
    const times = first.data.map((m) => Date.parse(m.createdAt));
    expect(Math.max(...times)).toBeLessThanOrEqual(at - RATE_WINDOW_MARGIN_MS);
    const oldest = await page(t.key, `limit=1&status=failed`);
    expect(Date.parse(oldest.data[0]!.createdAt)).toBeGreaterThanOrEqual(at - SEED_SPAN_MS);
    expect(new Set(newestFirst.map((m) => m.status))).toEqual(new Set(["sent", "failed", "received"]));
  });
});
