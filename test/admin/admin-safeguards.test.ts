import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { runScheduledJobs, type ScheduledJob } from "../../src/scheduled/jobs";
import { sha256Hex } from "../../src/lib/crypto";
import type { AdminAuditRow } from "../../src/features/audit/admin-store";
import { BASE, admin, api, expectError, json } from "../helpers/http";
import { createTenant, createWorkspace } from "../helpers/fixtures";
import { answerAtEdge } from "../helpers/edge";
import { operatorNumberUrl } from "../helpers/operator";
import { fakeClock } from "../helpers/clock";

afterEach(() => {
  vi.restoreAllMocks();
});

async function fetchWith(overrides: Partial<Env>, path: string, init: RequestInit = {}) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`${BASE}${path}`, init), { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("ADMIN_TOKEN shorter than 32 characters", () => {
  it("every admin request answers 500 with a clear message and a log line; the public API is unaffected", async () => {
    const short = "a".repeat(31);
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    for (const [method, path] of [
      ["POST", "/admin/v1/workspaces"],
      ["GET", `/admin/v1/workspaces/${crypto.randomUUID()}`],
      ["POST", "/admin/v1/secrets/reseal"],
    ]) {
      const res = await fetchWith({ ADMIN_TOKEN: short }, path!, {
        method,
        headers: { Authorization: `Bearer ${short}`, "Content-Type": "application/json" },
        body: method === "POST" ? "{}" : undefined,
      });
      const err = await expectError(res, 500, "internal_error");
      expect(err.error.message).toMatch(/ADMIN_TOKEN must be at least 32 characters/);
    }
    expect(lines.some((l) => l.includes("ADMIN_TOKEN is missing or shorter than 32 characters"))).toBe(true);
    expect(lines.join("\n")).not.toContain(short);
    const t = await createTenant();
    expect(
      (await fetchWith({ ADMIN_TOKEN: short }, "/api/v1/me", { headers: { Authorization: `Bearer ${t.key}` } })).status,
    ).toBe(200);
  });

  it("32 characters are enough", async () => {
    const token = "b".repeat(32);
    const res = await fetchWith({ ADMIN_TOKEN: token }, "/admin/v1/workspaces", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Exactly32", plan: "free" }),
    });
    expect(res.status).toBe(201);
  });
});

const auditOf = async (requestId: string) =>
  env.DB.prepare("SELECT * FROM admin_audit_log WHERE request_id = ?").bind(requestId).first<AdminAuditRow>();

describe("admin audit log", () => {
  it("records who (the token's id, not the token), what, when and the result of every admin call", async () => {
    const created = await admin("/workspaces", {
      method: "POST",
      json: { name: "Audited", plan: "free" },
      headers: { "X-Request-Id": `audit-${crypto.randomUUID()}` },
    });
    expect(created.status).toBe(201);
    const { id } = await json<{ id: string }>(created);
    const row = await auditOf(created.headers.get("X-Request-Id")!);
    expect(row).toMatchObject({
      actor: `admin-token:${(await sha256Hex(env.ADMIN_TOKEN)).slice(0, 12)}`,
      method: "POST",
      route: "/admin/v1/workspaces",
      path: "/admin/v1/workspaces",
      status: 201,
    });
    expect(Math.abs(Date.parse(row!.at) - Date.now())).toBeLessThan(60_000);
    expect(JSON.stringify(row)).not.toContain(env.ADMIN_TOKEN);

    const read = await admin(`/workspaces/${id}`);
    expect(await auditOf(read.headers.get("X-Request-Id")!)).toMatchObject({
      method: "GET",
      route: "/admin/v1/workspaces/:workspaceId",
      path: `/admin/v1/workspaces/${id}`,
      status: 200,
    });
    const refused = await admin("/workspaces", { method: "POST", json: { name: "x", plan: "platinum" } });
    expect(await auditOf(refused.headers.get("X-Request-Id")!)).toMatchObject({ status: 400 });
    const missing = await admin(`/api-keys/${crypto.randomUUID()}`, { method: "DELETE" });
    expect(await auditOf(missing.headers.get("X-Request-Id")!)).toMatchObject({
      method: "DELETE",
      route: "/admin/v1/api-keys/:keyId",
      status: 404,
    });
  });

  it("does not record calls that fail authentication (anyone could fill the table)", async () => {
    const res = await admin("/workspaces", {
      method: "POST",
      json: { name: "x", plan: "free" },
      headers: { Authorization: "Bearer wrong" },
    });
    expect(res.status).toBe(401);
    expect(await auditOf(res.headers.get("X-Request-Id")!)).toBeNull();
  });
});

describe("scheduled retention", () => {
  it("the cron handler purges audit rows older than 90 days in LIMITed batches, and keeps newer ones", async () => {
    const now = Date.UTC(2044, 5, 1);
    fakeClock(now);
    const actor = `retention-test-${crypto.randomUUID()}`;
    const old = new Date(now - 91 * 24 * 3_600_000).toISOString();
    const recent = new Date(now - 89 * 24 * 3_600_000).toISOString();
    // 5,100 old rows (more than one run deletes) and 3 recent ones, in two statements.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5100)
       INSERT INTO admin_audit_log (id, at, actor, method, route, path, status, request_id, client_address)
       SELECT ?1 || '-' || i, ?2, ?1, 'GET', '/admin/v1/x', '/admin/v1/x', 200, 'r', NULL FROM n`,
    )
      .bind(actor, old)
      .run();
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3)
       INSERT INTO admin_audit_log (id, at, actor, method, route, path, status, request_id, client_address)
       SELECT ?1 || '-new-' || i, ?2, ?1, 'GET', '/admin/v1/x', '/admin/v1/x', 200, 'r', NULL FROM n`,
    )
      .bind(actor, recent)
      .run();
    const count = async (at: string) =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM admin_audit_log WHERE actor = ? AND at = ?")
        .bind(actor, at)
        .first<{ n: number }>())!.n;
    // Every row older than the cutoff, this test's and any earlier test's (all are older at this clock).
    const expired = async () =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM admin_audit_log WHERE at < ?")
        .bind(new Date(now - 90 * 24 * 3_600_000).toISOString())
        .first<{ n: number }>())!.n;
    const before = await expired();
    expect(before).toBeGreaterThanOrEqual(5_100);

    const runCron = async () => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: now, cron: "17 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await runCron();
    // One run deletes at most 5 batches of 1,000.
    expect(await expired()).toBe(before - 5_000);
    await runCron();
    expect(await count(old)).toBe(0);
    expect(await count(recent)).toBe(3);
  });

  it("the cron handler purges daily usage rows older than 400 days in LIMITed batches, and keeps newer ones", async () => {
    const now = Date.UTC(2045, 5, 1);
    fakeClock(now);
    const workspaceId = crypto.randomUUID();
    const day = (daysAgo: number) => new Date(now - daysAgo * 24 * 3_600_000).toISOString().slice(0, 10);
    // 10,050 old rows (one row per number; more than one run deletes) and the boundary day kept.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10050)
       INSERT INTO usage_daily (workspace_id, day, channel_number_id, accepted, sent) SELECT ?1, ?2, 'n-' || i, 1, 1 FROM n`,
    )
      .bind(workspaceId, day(401))
      .run();
    await env.DB.prepare(
      "INSERT INTO usage_daily (workspace_id, day, channel_number_id, accepted, sent) VALUES (?, ?, 'kept', 1, 1)",
    )
      .bind(workspaceId, day(400))
      .run();
    const count = async () =>
      (
        await env.DB.prepare(
          "SELECT day, COUNT(*) AS n FROM usage_daily WHERE workspace_id = ? GROUP BY day ORDER BY day",
        )
          .bind(workspaceId)
          .all()
      ).results;
    const runCron = async () => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: now, cron: "17 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    // Every row older than the cutoff, this test's and any earlier test's (all are older at this clock).
    const expired = async () =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM usage_daily WHERE day < ?")
        .bind(day(400))
        .first<{ n: number }>())!.n;
    const before = await expired();
    expect(before).toBeGreaterThanOrEqual(10_050);
    await runCron();
    // One run deletes at most 10 batches of 1,000.
    expect(await expired()).toBe(before - 10_000);
    for (let i = 0; i < 5 && (await expired()) > 0; i++) await runCron();
    expect(await count()).toEqual([{ day: day(400), n: 1 }]);
  });

  it("one failing job never stops the others", async () => {
    const ran: string[] = [];
    const failing: ScheduledJob = {
      name: "failing",
      run: async () => {
        throw new Error("boom");
      },
    };
    const fine: ScheduledJob = {
      name: "fine",
      run: async () => {
        ran.push("fine");
        return 7;
      },
    };
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    expect(await runScheduledJobs(env, Date.now(), [failing, fine])).toEqual([
      { name: "failing", ok: false, handled: 0 },
      { name: "fine", ok: true, handled: 7 },
    ]);
    expect(ran).toEqual(["fine"]);
  });
});

describe("the plan's number limit", () => {
  it("holds under concurrent connects: exactly one of six gets the free plan's only slot", async () => {
    const workspaceId = await createWorkspace({ plan: "free" });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        admin(`/workspaces/${workspaceId}/channel-numbers`, {
          method: "POST",
          json: { displayPhoneNumber: `1555000${1000 + i}`, upstream: { type: "sandbox" } },
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 403, 403, 403, 403, 403]);
    const listed = await json<{ data: { status: string }[] }>(
      await admin(`/workspaces/${workspaceId}/channel-numbers`),
    );
    expect(listed.data.filter((n) => n.status === "connected")).toHaveLength(1);
  });
});

describe("connecting a live number", () => {
  const TOKEN = "EAAG-verification-token-0123456789";

  /** The operator at the network edge, answering the verification call with `reply`. */
  function operatorAnswers(reply: (req: Request) => Response | Promise<Response>) {
    const seen: Request[] = [];
    answerAtEdge(async (input, init) => {
      const req = new Request(input, init);
      if (!req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`))
        throw new Error(`unexpected outbound request: ${req.url}`);
      seen.push(req);
      return reply(req);
    });
    return seen;
  }

  const connect = (workspaceId: string, phoneNumberId: string, token = TOKEN) =>
    admin(`/workspaces/${workspaceId}/channel-numbers`, {
      method: "POST",
      json: { displayPhoneNumber: "15557771234", upstream: { type: "cloud", phoneNumberId, accessToken: token } },
    });
  const connectedNumbers = async (workspaceId: string) =>
    (await json<{ data: unknown[] }>(await admin(`/workspaces/${workspaceId}/channel-numbers`))).data;
  const phoneId = () => String(200000000000 + Math.floor(Math.random() * 799999999999));

  it("asks the operator, with the token, whether it controls the phone number id", async () => {
    const workspaceId = await createWorkspace();
    const id = phoneId();
    const seen = operatorAnswers(() => Response.json({ id, display_phone_number: "+1 555-777-1234" }));
    expect((await connect(workspaceId, id)).status).toBe(201);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe("GET");
    expect(seen[0]!.url).toBe(operatorNumberUrl(id));
    expect(seen[0]!.headers.get("authorization")).toBe(`Bearer ${TOKEN}`);
  });

  it.each([
    [
      "another id",
      (id: string) => Response.json({ id: `${id}9`, display_phone_number: "+1 555" }),
      "upstream.phoneNumberId",
    ],
    [
      "no such object for this token (code 100)",
      () => Response.json({ error: { code: 100, message: "Unsupported get request." } }, { status: 400 }),
      "upstream.phoneNumberId",
    ],
    [
      "forbidden (code 200)",
      () => Response.json({ error: { code: 200, message: "Permissions error" } }, { status: 403 }),
      "upstream.phoneNumberId",
    ],
    [
      "an invalid token (code 190)",
      () => Response.json({ error: { code: 190, message: "Invalid OAuth access token." } }, { status: 401 }),
      "upstream.accessToken",
    ],
  ])("refuses the number when the operator answers %s, and stores nothing", async (_, reply, path) => {
    const workspaceId = await createWorkspace();
    const id = phoneId();
    operatorAnswers(() => reply(id));
    const err = await expectError(await connect(workspaceId, id), 400, "invalid_request");
    expect(err.error.details?.[0]).toMatchObject({ path, rule: "upstream_verification" });
    expect(JSON.stringify(err)).not.toContain(TOKEN);
    expect(await connectedNumbers(workspaceId)).toEqual([]);
  });

  it("stores nothing when the operator cannot be reached, and says so", async () => {
    const workspaceId = await createWorkspace();
    operatorAnswers(() => {
      throw new TypeError("Network connection lost.");
    });
    const err = await expectError(await connect(workspaceId, phoneId()), 500, "internal_error");
    expect(err.error.message).toMatch(/could not be reached to verify/);
    expect(await connectedNumbers(workspaceId)).toEqual([]);
  });

  it("refuses a phone number id connected in another workspace, without calling the operator", async () => {
    const first = await createWorkspace();
    const second = await createWorkspace();
    const id = phoneId();
    const seen = operatorAnswers(() => Response.json({ id }));
    expect((await connect(first, id)).status).toBe(201);
    const err = await expectError(await connect(second, id, "EAAG-someone-elses-token-000000"), 400, "invalid_request");
    expect(err.error.message).toMatch(/already connected/);
    expect(err.error.details?.[0]).toMatchObject({ path: "upstream.phoneNumberId", rule: "unique" });
    expect(seen).toHaveLength(1);
    expect(await connectedNumbers(second)).toEqual([]);
  });

  it("two workspaces racing for one phone number id: one 201 and one clear 400, never a 500", async () => {
    const [a, b] = [await createWorkspace(), await createWorkspace()];
    const id = phoneId();
    operatorAnswers(() => Response.json({ id }));
    const statuses = (await Promise.all([connect(a, id), connect(b, id)])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 400]);
  });

  it("a disconnected phone number id can be connected again, after a new verification", async () => {
    const workspaceId = await createWorkspace();
    const id = phoneId();
    const seen = operatorAnswers(() => Response.json({ id }));
    const { id: numberId } = await json<{ id: string }>(await connect(workspaceId, id));
    expect((await admin(`/channel-numbers/${numberId}`, { method: "DELETE" })).status).toBe(204);
    expect((await connect(workspaceId, id)).status).toBe(201);
    expect(seen).toHaveLength(2);
    const t = await createTenant();
    expect((await api("/me", t.key)).status).toBe(200);
  });
});
