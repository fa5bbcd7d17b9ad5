// The client side of `npm run soak`: a mixed load over every number of every workspace, as a
// careful customer would make it: sends with fresh Idempotency-Keys (a send whose answer is lost,
// or a 5xx, is retried with the same key until it gets a definitive answer, as the API guide
// recommends), identical replays, conflicting replays, reads of one message and lists, and
// inbound messages injected through the operator's webhook. Every answer is recorded with its
// start and end time, so that the checks can tell the kill windows apart.
import { randomUUID } from "node:crypto";

/**
 * A number of the soak: ours (`id`), the operator's (`phoneNumberId`, `token`), and the recipients the load writes to.
 * @typedef {{ id: string, phoneNumberId: string, token: string, recipients: string[] }} SoakNumber
 */
/** @typedef {{ index: number, workspaceId: string, loadKey: string, checkKey: string, numbers: SoakNumber[] }} Tenant */
/**
 * A send as the load made it: its key, payload, attempts and outcome.
 * @typedef {object} LoadSend
 * @property {Tenant} tenant
 * @property {string} workspaceId
 * @property {string} numberId
 * @property {string} phoneNumberId
 * @property {string} key
 * @property {string} to
 * @property {string} text
 * @property {{ channelNumberId: string, to: string, text: { body: string } }} body
 * @property {number} attempts
 * @property {string | null} jobId
 * @property {number | null} acceptedAt
 * @property {number} firstTriedAt
 * @property {string} outcome
 */
/** A send the API accepted. @typedef {LoadSend & { jobId: string, acceptedAt: number }} AcceptedLoadSend */
/** @typedef {{ op: string, status: number | null, start: number, end: number, error: string | null, json: ReturnType<typeof JSON.parse> | null, requestId: string | null }} Entry */

/** What a network failure is called in the answers: its cause's code (ECONNRESET, …) or its name. @param {unknown} err */
function networkError(err) {
  if (!(err instanceof Error)) return "error";
  const cause = /** @type {{ code?: unknown } | undefined} */ (err.cause);
  return typeof cause?.code === "string" ? cause.code : err.name || "error";
}

/** @param {LoadSend} s @returns {s is AcceptedLoadSend} */
export const wasAccepted = (s) => s.jobId !== null && s.acceptedAt !== null;

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
const TIMEOUT_MS = 15_000;
/** How long a send is retried with its key (network errors, 5xx) before it is given up. */
const SEND_RETRY_LIMIT_MS = 120_000;

/** Offered per number and second (Poisson): sends, and the other operations in proportion. @type {Array<[string, number]>} */
const MIX = [
  ["send", 0.8],
  ["replay", 0.15],
  ["conflict", 0.05],
  ["read", 0.2],
  ["list", 0.05],
  ["inbound", 0.1],
];

/**
 * @param {{ baseUrl: string, tenants: Tenant[], random: import("./soak-random.mjs").Random, runId: string,
 *   operatorWebhooks: { inject: (phoneNumberId: string, from: string, wamid: string, text: string) => void } }} options
 */
export function createLoad({ baseUrl, tenants, random, runId, operatorWebhooks }) {
  /** Every API answer (or network failure): { op, status, start, end, error }. @type {import("./soak-checks.mjs").ClientAnswer[]} */
  const answers = [];
  /** Every send: its key, payload, attempts and outcome. @type {LoadSend[]} */
  const sends = [];
  /** Failed expectations (outside the invariants on 5xx, which are judged with the kill windows). @type {Record<string, unknown>[]} */
  const mismatches = [];
  const counts = { replayOk: 0, conflictOk: 0, readOk: 0, listOk: 0 };
  let stopping = false;
  let inboundSeq = 0;

  /**
   * @param {string} op @param {string} method @param {string} path @param {string} key
   * @param {{ body?: unknown, idempotencyKey?: string }} [options]
   * @returns {Promise<Entry>}
   */
  async function request(op, method, path, key, { body, idempotencyKey } = {}) {
    const start = Date.now();
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${key}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    /** @type {Entry} */
    let entry;
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const text = await res.text();
      let json = null;
      try {
        json = JSON.parse(text);
      } catch {
        // judged by status
      }
      entry = {
        op,
        status: res.status,
        start,
        end: Date.now(),
        error: null,
        json,
        requestId: res.headers.get("x-request-id"),
      };
    } catch (err) {
      entry = { op, status: null, start, end: Date.now(), error: networkError(err), json: null, requestId: null };
    }
    answers.push({
      op: entry.op,
      status: entry.status,
      start: entry.start,
      end: entry.end,
      error: entry.error,
      requestId: entry.requestId,
      code: entry.json?.error?.code ?? null,
    });
    return entry;
  }

  /** @param {Tenant} tenant */
  const accepted = (tenant) => sends.filter((s) => s.tenant === tenant).filter(wasAccepted);
  /** @param {Tenant} tenant */
  const pickAccepted = (tenant) => {
    const list = accepted(tenant);
    return list.length ? random.pick(list) : null;
  };

  /** @param {Tenant} tenant @param {SoakNumber} number */
  async function send(tenant, number) {
    const to = random.pick(number.recipients);
    const text = `soak ${runId} ${randomUUID().slice(0, 8)} ${"x".repeat(Math.floor(random.between(0, 40)))}`;
    /** @type {LoadSend} */
    const s = {
      tenant,
      workspaceId: tenant.workspaceId,
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
    while (true) {
      s.attempts++;
      const r = await request("send", "POST", "/api/v1/messages", tenant.loadKey, {
        body: s.body,
        idempotencyKey: s.key,
      });
      if (r.status === 201 || (r.status === 200 && r.json?.status === "duplicado_identico")) {
        s.jobId = r.json.jobId;
        s.acceptedAt = r.end;
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

  /** @param {Tenant} tenant @param {boolean} conflicting */
  async function replay(tenant, conflicting) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const body = conflicting ? { ...s.body, text: { body: `${s.text} (changed)` } } : s.body;
    const r = await request(conflicting ? "conflict" : "replay", "POST", "/api/v1/messages", tenant.loadKey, {
      body,
      idempotencyKey: s.key,
    });
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

  /** @param {Tenant} tenant */
  async function read(tenant) {
    const s = pickAccepted(tenant);
    if (!s) return;
    const r = await request("read", "GET", `/api/v1/messages/${s.jobId}`, tenant.loadKey);
    if (r.status === null || r.status >= 500) return;
    if (r.status === 200 && r.json?.id === s.jobId && r.json?.to === s.to && r.json?.text?.body === s.text)
      counts.readOk++;
    else mismatches.push({ what: "read", jobId: s.jobId, status: r.status, body: r.json });
  }

  /** @param {Tenant} tenant */
  async function list(tenant) {
    const r = await request("list", "GET", "/api/v1/messages?limit=20", tenant.loadKey);
    if (r.status === null || r.status >= 500) return;
    if (r.status === 200 && Array.isArray(r.json?.data)) counts.listOk++;
    else mismatches.push({ what: "list", status: r.status, body: r.json });
  }

  /** @param {SoakNumber} number */
  function inbound(number) {
    const n = ++inboundSeq;
    const from = `55219${String(Math.floor(random.between(0, 1e8))).padStart(8, "0")}`;
    operatorWebhooks.inject(number.phoneNumberId, from, `wamid.SOAKIN.${runId}.${n}`, `inbound ${runId} ${n}`);
  }

  /** @type {Set<Promise<void>>} */
  const inFlight = new Set();
  /** @param {Promise<void>} p */
  const track = (p) => {
    inFlight.add(p);
    p.finally(() => inFlight.delete(p));
  };

  /** One loop per number; each operation runs on its own, so a slow answer never slows the offered load. */
  /** @param {Tenant} tenant @param {SoakNumber} number */
  async function numberLoop(tenant, number) {
    const total = MIX.reduce((a, [, r]) => a + r, 0);
    while (!stopping) {
      await sleep(random.interval(total));
      if (stopping) break;
      let x = random.next() * total;
      const [op] = MIX.find(([, r]) => (x -= r) < 0) ?? /** @type {[string, number]} */ (MIX[0]);
      if (op === "send") track(send(tenant, number));
      else if (op === "replay") track(replay(tenant, false));
      else if (op === "conflict") track(replay(tenant, true));
      else if (op === "read") track(read(tenant));
      else if (op === "list") track(list(tenant));
      else inbound(number);
    }
  }

  /** @type {Promise<void>[]} */
  let loops = [];
  return {
    answers,
    sends,
    mismatches,
    counts,
    start() {
      loops = tenants.flatMap((t) => t.numbers.map((n) => numberLoop(t, n)));
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
