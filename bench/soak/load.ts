// The client side of `npm run soak`: a mixed load over every number of every workspace, as a careful customer
// would make it: sends with fresh Idempotency-Keys (a send whose answer is lost, or a 5xx, is retried with the same
// key until it gets a definitive answer, as the API guide recommends), identical and conflicting replays, reads of
// one message, and inbound messages injected through the operator's webhook. Every answer is recorded with its start
// and end time, so that the checks can tell the kill windows apart.
import { randomUUID } from "node:crypto";
import { sleep, type Random } from "../lib/run.ts";
import type { AcceptedSend, ClientAnswer } from "./checks.ts";

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
/** A send as the load made it: its key, payload, attempts and outcome (`jobId` and `acceptedAt` once accepted). */
export type LoadSend = Omit<AcceptedSend, "jobId" | "acceptedAt"> & {
  tenant: Tenant;
  key: string;
  attempts: number;
  jobId: string | null;
  acceptedAt: number | null;
  outcome: string;
};
export type AcceptedLoadSend = LoadSend & AcceptedSend;

export const wasAccepted = (s: LoadSend): s is AcceptedLoadSend => s.jobId !== null && s.acceptedAt !== null;

/** How long a send is retried with its key (network errors, 5xx) before it is given up. */
const SEND_RETRY_LIMIT_MS = 120_000;
/** Offered per number and second (Poisson): sends, and the other operations in proportion. */
const MIX = { send: 0.8, replay: 0.15, conflict: 0.05, read: 0.25, inbound: 0.1 };

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
  const counts = { replayOk: 0, conflictOk: 0, readOk: 0 };
  let stopping = false;
  let inboundSeq = 0;

  /** One request with the tenant's load key; its status (null: a network failure) and JSON body. */
  async function request(op: string, path: string, tenant: Tenant, send?: LoadSend, body?: unknown) {
    const start = Date.now();
    const headers: Record<string, string> = { Authorization: `Bearer ${tenant.loadKey}` };
    if (send) Object.assign(headers, { "Content-Type": "application/json", "Idempotency-Key": send.key });
    const answer: ClientAnswer = { op, status: null, start, end: start, error: null, requestId: null, code: null };
    let json: ReturnType<typeof JSON.parse> = null;
    try {
      const init = { method: send ? "POST" : "GET", headers, body: send ? JSON.stringify(body) : undefined };
      const res = await fetch(`${o.baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
      const text = await res.text();
      [answer.status, answer.requestId] = [res.status, res.headers.get("x-request-id")];
      json = JSON.parse(text);
    } catch (err) {
      // A network failure is called by its cause's code (ECONNRESET, …) or its name; a body that is not JSON is judged by its status.
      const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
      if (answer.status === null)
        answer.error = typeof cause?.code === "string" ? cause.code : (err instanceof Error && err.name) || "error";
    }
    answer.end = Date.now();
    answer.code = json?.error?.code ?? null;
    answers.push(answer);
    return { status: answer.status, json, end: answer.end };
  }
  const payload = (s: LoadSend, text = s.text) => ({ channelNumberId: s.numberId, to: s.to, text: { body: text } });
  /** Whether an answer was definitive (a 5xx or a network failure is judged with the kill windows). */
  const definitive = (status: number | null) => status !== null && status < 500;
  const expect = (what: string, ok: boolean, counted: keyof typeof counts, details: Record<string, unknown>) =>
    ok ? counts[counted]++ : mismatches.push({ what, ...details });

  async function send(tenant: Tenant, number: SoakNumber) {
    const to = random.pick(number.recipients);
    const text = `soak ${runId} ${randomUUID().slice(0, 8)} ${"x".repeat(Math.floor(random.between(0, 40)))}`;
    const s: LoadSend = {
      ...{ tenant, numberId: number.id, phoneNumberId: number.phoneNumberId, key: `soak-${randomUUID()}`, to, text },
      ...{ attempts: 0, jobId: null, acceptedAt: null, firstTriedAt: Date.now(), outcome: "pending" },
    };
    sends.push(s);
    for (;;) {
      s.attempts++;
      const r = await request("send", "/api/v1/messages", tenant, s, payload(s));
      if (r.status === 201 || (r.status === 200 && r.json?.status === "duplicado_identico")) {
        [s.jobId, s.acceptedAt] = [r.json.jobId, r.end];
        s.outcome = r.status === 201 ? "accepted" : "accepted_on_retry";
        return;
      }
      if (r.status === 429) return void (s.outcome = "refused_429");
      if (!definitive(r.status) && Date.now() - s.firstTriedAt < SEND_RETRY_LIMIT_MS) {
        await sleep(1_000);
        continue;
      }
      s.outcome = r.status === null ? "gave_up" : `unexpected_${r.status}`;
      return void mismatches.push({ what: "send answer", key: s.key, status: r.status, body: r.json });
    }
  }

  const pickAccepted = (tenant: Tenant) => {
    const list = sends.filter((s) => s.tenant === tenant).filter(wasAccepted);
    return list.length ? random.pick(list) : null;
  };

  async function replay(tenant: Tenant, conflicting: boolean) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const text = conflicting ? `${s.text} (changed)` : s.text;
    const r = await request(conflicting ? "conflict" : "replay", "/api/v1/messages", tenant, s, payload(s, text));
    if (!definitive(r.status)) return;
    const ok = conflicting
      ? r.status === 409 && r.json?.error?.code === "idempotency_conflict"
      : r.status === 200 && r.json?.status === "duplicado_identico" && r.json?.jobId === s.jobId;
    const details = { key: s.key, jobId: s.jobId, status: r.status, body: r.json };
    expect(conflicting ? "conflicting replay" : "replay", ok, conflicting ? "conflictOk" : "replayOk", details);
  }

  async function read(tenant: Tenant) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const r = await request("read", `/api/v1/messages/${s.jobId}`, tenant);
    const m = r.json;
    const ok = r.status === 200 && m?.id === s.jobId && m?.to === s.to && m?.text?.body === s.text;
    if (definitive(r.status)) expect("read", ok, "readOk", { jobId: s.jobId, status: r.status, body: m });
  }

  const inFlight = new Set<Promise<void>>();
  const ops: Record<keyof typeof MIX, (tenant: Tenant, number: SoakNumber) => Promise<void> | void> = {
    send,
    replay: (t) => replay(t, false),
    conflict: (t) => replay(t, true),
    read,
    inbound: (_, number) => {
      const [n, from] = [++inboundSeq, `55219${String(Math.floor(random.between(0, 1e8))).padStart(8, "0")}`];
      o.inject(number.phoneNumberId, from, `wamid.SOAKIN.${runId}.${n}`, `inbound ${runId} ${n}`);
    },
  };

  /** One loop per number; each operation runs on its own, so a slow answer never slows the offered load. */
  async function numberLoop(tenant: Tenant, number: SoakNumber) {
    const total = Object.values(MIX).reduce((a, r) => a + r, 0);
    while (!stopping) {
      await sleep(random.interval(total));
      if (stopping) break;
      let x = random.next() * total;
      const op = (Object.entries(MIX).find(([, r]) => (x -= r) < 0)?.[0] ?? "send") as keyof typeof MIX;
      const p = Promise.resolve(ops[op](tenant, number));
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
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
