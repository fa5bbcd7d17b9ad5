import { Hono } from "hono";
import { z } from "zod";
import { listKeys } from "../api-keys/store";
import { AUDIT_MAX_ROWS_PER_ACTION, AUDIT_RETENTION_DAYS, listAudit, type AuditRow } from "./store";
import { keyLabel } from "../../domain/api-keys";
import { AUDIT_ACTIONS, isAuditAction } from "../../domain/audit";
import type { DashboardEnv } from "../../dashboard/context";
import { Time, TableScroll } from "../../dashboard/components";
import { requireRole } from "../../dashboard/roles";

const PAGE_SIZE = 50;
const ACTOR_TYPES = { member: "members", api_key: "API keys", admin: "our administrators" } as const;

// The page's query: anything unknown or malformed is ignored (the unfiltered first page), never an error.
const Query = z.object({
  action: z.string().refine(isAuditAction).optional().catch(undefined),
  actor: z.enum(["member", "api_key", "admin"]).optional().catch(undefined),
  before: z.coerce.number().int().positive().optional().catch(undefined),
});

function actorText(row: AuditRow, keys: Map<string, string>): string {
  if (row.actor_type === "member") return row.actor_label ?? "a removed member";
  if (row.actor_type === "api_key") return `API key ${keys.get(row.actor_id) ?? row.actor_id}`;
  return "Operator (support)";
}

const queryString = (q: Record<string, string | number | undefined>) => {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : "";
};

/** Owners only: who did what to the workspace, newest first, filterable by action and kind of actor. */
export const auditPage = new Hono<DashboardEnv>().get("/audit", requireRole("owner"), async (c) => {
  const { workspace_id: workspaceId } = c.get("session");
  const q = Query.parse(c.req.query());
  const [rows, keys] = await Promise.all([
    listAudit(c.env.DB, workspaceId, {
      action: q.action,
      actorType: q.actor,
      beforeSeq: q.before,
      limit: PAGE_SIZE + 1,
    }),
    listKeys(c.env.DB, workspaceId),
  ]);
  const keyNames = new Map(keys.map((k) => [k.id, keyLabel(k)]));
  const page = rows.slice(0, PAGE_SIZE);
  const older = rows.length > PAGE_SIZE ? page.at(-1)?.seq : undefined;
  return c.render(
    <>
      <h1>Audit log</h1>
      <p>
        Every change to the workspace, from the dashboard, the API or our administrators: who, what, when, from which
        address, and the request id to quote to support. Kept {AUDIT_RETENTION_DAYS} days, and at most the newest{" "}
        {AUDIT_MAX_ROWS_PER_ACTION} entries of each action. Keys, secrets and links are never recorded.
      </p>
      <form method="get" action="/dashboard/audit" class="row">
        <label for="action">Action</label>
        <select id="action" name="action">
          <option value="">any</option>
          {Object.entries(AUDIT_ACTIONS).map(([value, label]) => (
            <option value={value} selected={value === q.action}>
              {label}
            </option>
          ))}
        </select>
        <label for="actor">By</label>
        <select id="actor" name="actor">
          <option value="">anyone</option>
          {Object.entries(ACTOR_TYPES).map(([value, label]) => (
            <option value={value} selected={value === q.actor}>
              {label}
            </option>
          ))}
        </select>
        <button type="submit">Filter</button>
      </form>
      {page.length === 0 ? (
        <p>No entry{q.action || q.actor ? " matches these filters" : " yet"}.</p>
      ) : (
        <TableScroll label="Audit log">
          <table class="audit-log">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Target</th>
                <th scope="col">From</th>
                <th scope="col">Request id</th>
              </tr>
            </thead>
            <tbody>
              {page.map((r) => (
                <tr>
                  <td>
                    <Time iso={r.at} seconds />
                  </td>
                  <td>{actorText(r, keyNames)}</td>
                  <td>
                    {isAuditAction(r.action) ? AUDIT_ACTIONS[r.action] : r.action}
                    {r.detail ? <span class="muted">: {r.detail}</span> : null}
                  </td>
                  <td>
                    {r.target_type}
                    {r.target_id ? <code> {r.target_id}</code> : null}
                  </td>
                  <td class="address">{(r.actor_type === "admin" ? null : r.client_address) ?? "—"}</td>
                  <td>
                    <code>{r.request_id}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <p>
        {q.before !== undefined ? (
          <a href={`/dashboard/audit${queryString({ action: q.action, actor: q.actor })}`}>Newest</a>
        ) : null}
        {q.before !== undefined && older !== undefined ? " · " : null}
        {older !== undefined ? (
          <a href={`/dashboard/audit${queryString({ action: q.action, actor: q.actor, before: older })}`}>Older</a>
        ) : null}
      </p>
    </>,
    { title: "Audit log" },
  );
});
