// The client side of `npm run soak`: a mixed load over every number of every workspace, as a careful
// customer would make it: sends with fresh Idempotency-Keys (a send whose answer is lost, or a 5xx, is
// retried with the same key until it gets a definitive answer, as the API guide recommends), identical
// replays, conflicting replays, reads of one message and lists, and inbound messages injected through
// the operator's webhook. Every answer is recorded with its start and end time, so that the checks can
// tell the kill windows apart.
import { randomUUID } from "node:crypto";
import { sleep, type Random } from "../lib/run.ts";
import type { ClientAnswer } from "./checks.ts";

export interface SoakNumber {
  id: string;
  phoneNumberId: string;
  token: string;
  recipients: string[];
}
export interface Tenant {
  index: number;
  workspaceId: string;
  loadKey: string;
  checkKey: string;
  numbers: SoakNumber[];
}
/** A send as the load made it: its key, payload, attempts and outcome. */
export interface LoadSend {
  tenant: Tenant;
  numberId: string;
  phoneNumberId: string;
  key: string;
  to: string;
  text: string;
  body: { channelNumberId: string; to: string; text: { body: string } };
  attempts: number;
  jobId: string | null;
  acceptedAt: number | null;
  firstTriedAt: number;
  outcome: string;
}
export type AcceptedLoadSend = LoadSend & { jobId: string; acceptedAt: number };

export const wasAccepted = (s: LoadSend): s is AcceptedLoadSend => s.jobId !== null && s.acceptedAt !== null;

const TIMEOUT_MS = 15_000;
/** How long a send is retried with its key (network errors, 5xx) before it is given up. */
const SEND_RETRY_LIMIT_MS = 120_000;
/** Offered per number and second (Poisson): sends, and the other operations in proportion. */
const MIX: Array<[string, number]> = [
  ["send", 0.8],
  ["replay", 0.15],
  ["conflict", 0.05],
  ["read", 0.2],
  ["list", 0.05],
  ["inbound", 0.1],
];

export function createLoad(o: {
  baseUrl: string;
  tenants: Tenant[];
  random: Random;
  runId: string;
  inject: (phoneNumberId: string, from: string, wamid: string, text: string) => void;
}) {
  const { random, runId } = o;
  const answers: ClientAnswer[] = [];
  const sends: LoadSend[] = [];
  /** Failed expectations (outside the invariants on 5xx, which are judged with the kill windows). */
  const mismatches: Array<Record<string, unknown>> = [];
  const counts = { replayOk: 0, conflictOk: 0, readOk: 0, listOk: 0 };
  let stopping = false;
  let inboundSeq = 0;

  async function request(
    op: string,
    method: string,
    path: string,
    key: string,
    body?: unknown,
    idempotencyKey?: string,
  ) {
    const start = Date.now();
    const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    let status: number | null = null;
    let json: ReturnType<typeof JSON.parse> = null;
    let error: string | null = null;
    let requestId: string | null = null;
    try {
      const res = await fetch(`${o.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const text = await res.text();
      [status, requestId] = [res.status, res.headers.get("x-request-id")];
      try {
        json = JSON.parse(text);
      } catch {
        // judged by status
      }
    } catch (err) {
      // A network failure is called by its cause's code (ECONNRESET, …) or its name.
      const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
      error = typeof cause?.code === "string" ? cause.code : (err instanceof Error && err.name) || "error";
    }
    const end = Date.now();
    answers.push({ op, status, start, end, error, requestId, code: json?.error?.code ?? null });
    return { status, json, end };
  }

  const pickAccepted = (tenant: Tenant) => {
    const list = sends.filter((s) => s.tenant === tenant).filter(wasAccepted);
    return list.length ? random.pick(list) : null;
  };

  async function send(tenant: Tenant, number: SoakNumber) {
    const to = random.pick(number.recipients);
    const text = `soak ${runId} ${randomUUID().slice(0, 8)} ${"x".repeat(Math.floor(random.between(0, 40)))}`;
    const s: LoadSend = {
      tenant,
      numberId: number.id,
      phoneNumberId: number.phoneNumberId,
      key: `soak-${randomUUID()}`,
      to,
      text,
      body: { channelNumberId: number.id, to, text: { body: text } },
      attempts: 0,
      jobId: null,
      acceptedAt: null,
      firstTriedAt: Date.now(),
      outcome: "pending",
    };
    sends.push(s);
    for (;;) {
      s.attempts++;
      const r = await request("send", "POST", "/api/v1/messages", tenant.loadKey, s.body, s.key);
      if (r.status === 201 || (r.status === 200 && r.json?.status === "duplicado_identico")) {
        [s.jobId, s.acceptedAt] = [r.json.jobId, r.end];
        s.outcome = r.status === 201 ? "accepted" : "accepted_on_retry";
        return;
      }
      if (r.status === 429) {
        s.outcome = "refused_429";
        return;
      }
      if ((r.status === null || r.status >= 500) && Date.now() - s.firstTriedAt < SEND_RETRY_LIMIT_MS) {
        await sleep(1_000);
        continue;
      }
      s.outcome = r.status === null ? "gave_up" : `unexpected_${r.status}`;
      mismatches.push({ what: "send answer", key: s.key, status: r.status, body: r.json });
      return;
    }
  }

  async function replay(tenant: Tenant, conflicting: boolean) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const body = conflicting ? { ...s.body, text: { body: `${s.text} (changed)` } } : s.body;
    const r = await request(
      conflicting ? "conflict" : "replay",
      "POST",
      "/api/v1/messages",
      tenant.loadKey,
      body,
      s.key,
    );
    if (r.status === null || r.status >= 500) return; // judged with the kill windows
    const ok = conflicting
      ? r.status === 409 && r.json?.error?.code === "idempotency_conflict"
      : r.status === 200 && r.json?.status === "duplicado_identico" && r.json?.jobId === s.jobId;
    if (ok) counts[conflicting ? "conflictOk" : "replayOk"]++;
    else
      mismatches.push({
        what: conflicting ? "conflicting replay" : "replay",
        key: s.key,
        jobId: s.jobId,
        status: r.status,
        body: r.json,
      });
  }

  async function read(tenant: Tenant) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const r = await request("read", "GET", `/api/v1/messages/${s.jobId}`, tenant.loadKey);
    if (r.status === null || r.status >= 500) return;
    if (r.status === 200 && r.json?.id === s.jobId && r.json?.to === s.to && r.json?.text?.body === s.text)
      counts.readOk++;
    else mismatches.push({ what: "read", jobId: s.jobId, status: r.status, body: r.json });
  }

  async function list(tenant: Tenant) {
    const r = await request("list", "GET", "/api/v1/messages?limit=20", tenant.loadKey);
    if (r.status === null || r.status >= 500) return;
    if (r.status === 200 && Array.isArray(r.json?.data)) counts.listOk++;
    else mismatches.push({ what: "list", status: r.status, body: r.json });
  }

  function inbound(number: SoakNumber) {
    const n = ++inboundSeq;
    const from = `55219${String(Math.floor(random.between(0, 1e8))).padStart(8, "0")}`;
    o.inject(number.phoneNumberId, from, `wamid.SOAKIN.${runId}.${n}`, `inbound ${runId} ${n}`);
  }

  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  /** One loop per number; each operation runs on its own, so a slow answer never slows the offered load. */
  async function numberLoop(tenant: Tenant, number: SoakNumber) {
    const total = MIX.reduce((a, [, r]) => a + r, 0);
    while (!stopping) {
      await sleep(random.interval(total));
      if (stopping) break;
      let x = random.next() * total;
      const [op] = MIX.find(([, r]) => (x -= r) < 0) ?? (MIX[0] as [string, number]);
      if (op === "send") track(send(tenant, number));
      else if (op === "replay") track(replay(tenant, false));
      else if (op === "conflict") track(replay(tenant, true));
      else if (op === "read") track(read(tenant));
      else if (op === "list") track(list(tenant));
      else inbound(number);
    }
  }

  let loops: Promise<void>[] = [];
  return {
    answers,
    sends,
    mismatches,
    counts,
    start() {
      loops = o.tenants.flatMap((t) => t.numbers.map((n) => numberLoop(t, n)));
    },
    /** Stops offering load and waits until every started operation has its definitive answer. */
    async stop() {
      stopping = true;
      await Promise.all(loops);
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    /** Operations still waiting for their answer, and sends among them. */
    inFlight: () => ({ operations: inFlight.size, sends: sends.filter((s) => s.outcome === "pending").length }),
  };
}
