// `npm run bench`: the requests of each case, as autocannon request descriptions. Each checks
// its answer and counts what it cannot accept as `bad`.
import { tallyResponse } from "./statistics.mjs";

/** @typedef {import("./statistics.mjs").Tally} Tally */
/** @typedef {import("./load.mjs").LoadRequest} LoadRequest */
/** @typedef {{ id: string, apiKey: string, numbers: string[] }} Workspace */
/** @typedef {{ ws: Workspace, numberId: string }} Target */
/** A send as made: whose, where, its key and body (and its jobId once accepted). @typedef {{ apiKey: string, workspaceId: string, numberId: string, key: string, body: string }} Sent */
/** @typedef {Sent & { jobId: string }} Accepted */

/**
 * An answer's JSON object, or null when it is not one (such an answer counts as bad).
 * @param {string} body @returns {Record<string, unknown> | null}
 */
export const parseJsonOrNull = (body) => {
  try {
    const value = JSON.parse(body);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
};

/** @param {string} apiKey */
const auth = (apiKey) => `Bearer ${apiKey}`;

/**
 * POST /messages round-robin over `over`; every request has a fresh Idempotency-Key. Accepted
 * sends are pushed to `accepted` and counted per workspace in `perWorkspace` (when it has it).
 * `path` is the accept baseline's instead of the send's for (k).
 * @param {{ runId: string, prefix: string, tally: Tally, accepted: Accepted[] | null, over: Target[], bodyOf: (numberId: string, j: number) => string, perWorkspace?: Map<string, number>, path?: string }} o
 * @returns {LoadRequest[]}
 */
export function sendRequests({
  runId,
  prefix,
  tally,
  accepted,
  over,
  bodyOf,
  perWorkspace,
  path = "/api/v1/messages",
}) {
  let j = 0;
  return [
    {
      method: "POST",
      path,
      setupRequest: (req, context) => {
        const i = j++;
        const { ws, numberId } = /** @type {Target} */ (over[i % over.length]);
        const key = `bench-${runId}-${prefix}-${i}`;
        const body = bodyOf(numberId, i);
        context.sent = { apiKey: ws.apiKey, workspaceId: ws.id, numberId, key, body };
        return {
          ...req,
          headers: {
            ...req.headers,
            authorization: auth(ws.apiKey),
            "content-type": "application/json",
            "idempotency-key": key,
          },
          body,
        };
      },
      onResponse: (status, body, context, headers) => {
        tallyResponse(tally, headers);
        if (status !== 201) {
          tally.bad++;
          return;
        }
        const sent = context.sent;
        const jobId = parseJsonOrNull(body)?.jobId;
        if (!sent || typeof jobId !== "string" || !jobId) {
          tally.bad++;
          return;
        }
        const before = perWorkspace?.get(sent.workspaceId);
        if (perWorkspace && before !== undefined) perWorkspace.set(sent.workspaceId, before + 1);
        accepted?.push({ ...sent, jobId });
      },
    },
  ];
}

/** GET /me round-robin over the workspaces' keys. @param {Workspace[]} workspaces @param {Tally} tally @returns {LoadRequest[]} */
export function meRequests(workspaces, tally) {
  let j = 0;
  return [
    {
      method: "GET",
      path: "/api/v1/me",
      setupRequest: (req) => ({
        ...req,
        headers: {
          ...req.headers,
          authorization: auth(/** @type {Workspace} */ (workspaces[j++ % workspaces.length]).apiKey),
        },
      }),
      onResponse: (status, _body, _context, headers) => {
        tallyResponse(tally, headers);
        if (status !== 200) tally.bad++;
      },
    },
  ];
}

/** The accepted (key, body) pairs again: each must answer 200 duplicado_identico with its jobId. @param {Accepted[]} accepted @param {Tally} tally @returns {LoadRequest[]} */
export function replayRequests(accepted, tally) {
  let j = 0;
  return [
    {
      method: "POST",
      path: "/api/v1/messages",
      setupRequest: (req, context) => {
        const s = /** @type {Accepted} */ (accepted[j++ % accepted.length]);
        context.sent = s;
        return {
          ...req,
          headers: {
            ...req.headers,
            authorization: auth(s.apiKey),
            "content-type": "application/json",
            "idempotency-key": s.key,
          },
          body: s.body,
        };
      },
      onResponse: (status, body, context, headers) => {
        tallyResponse(tally, headers);
        const parsed = parseJsonOrNull(body);
        if (
          status !== 200 ||
          parsed?.status !== "duplicado_identico" ||
          parsed?.jobId !== /** @type {Accepted | undefined} */ (context.sent)?.jobId
        )
          tally.bad++;
      },
    },
  ];
}

/** GET /messages/{id} over the accepted jobIds. @param {Accepted[]} accepted @param {Tally} tally @returns {LoadRequest[]} */
export function readRequests(accepted, tally) {
  let j = 0;
  return [
    {
      method: "GET",
      setupRequest: (req, context) => {
        const s = /** @type {Accepted} */ (accepted[j++ % accepted.length]);
        context.sent = s;
        return {
          ...req,
          path: `/api/v1/messages/${s.jobId}`,
          headers: { ...req.headers, authorization: auth(s.apiKey) },
        };
      },
      onResponse: (status, body, context, headers) => {
        tallyResponse(tally, headers);
        const parsed = parseJsonOrNull(body);
        if (status !== 200 || parsed?.id !== /** @type {Accepted | undefined} */ (context.sent)?.jobId) tally.bad++;
      },
    },
  ];
}

/** Whether a page's `data` holds exactly `ids`, in order. @param {unknown} data @param {string[]} ids */
export const sameIds = (data, ids) =>
  Array.isArray(data) &&
  data.length === ids.length &&
  data.every((/** @type {{ id?: unknown } | null} */ m, i) => m?.id === ids[i]);

/** One list page, whose every answer must hold exactly `ids`. @param {string} apiKey @param {string} path @param {string[]} ids @param {Tally} tally @returns {LoadRequest[]} */
export function listRequests(apiKey, path, ids, tally) {
  return [
    {
      method: "GET",
      path,
      headers: { authorization: auth(apiKey) },
      onResponse: (status, body, _context, headers) => {
        tallyResponse(tally, headers);
        const parsed = parseJsonOrNull(body);
        if (status !== 200 || !sameIds(parsed?.data, ids)) tally.bad++;
      },
    },
  ];
}
