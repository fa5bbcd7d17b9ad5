import { Hono } from "hono";
import type { Context } from "hono";
import { getKey, listKeys, type ApiKeyRow } from "./store";
import { keyCreatedDetail, keyLabel, keyPrefix } from "../../domain/api-keys";
import { issueApiKey } from "./issue-key";
import { revokeApiKey } from "./revoke-key";
import { grantableKeyRoles, KeyRoleSchema, type KeyRole } from "../../lib/roles";
import { auditMember } from "../audit/member-audit";
import { KEY_CACHE_TTL_MS } from "../../domain/key-cache";
import { findByUuid } from "../../lib/job-id";
import type { DashboardEnv } from "../../dashboard/context";
import { ConfirmForm, FieldError, Time, TableScroll } from "../../dashboard/components";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { hasRole, requireRole } from "../../dashboard/roles";
import { confirmPage, forbiddenPage, notFoundPage, rateLimitedPage } from "../../dashboard/pages/errors";

const MAX_NAME_CHARS = 200;
const REVOKE_DELAY_S = KEY_CACHE_TTL_MS / 1000;

/** What each role lets a key do, in the words of the create form and the docs (docs/customers/api.md, key roles). */
const ROLE_TEXT: Record<KeyRole, string> = {
  owner: "owner: everything, number changes included",
  developer: "developer: sends, webhooks, sandbox helpers; no number changes",
  viewer: "viewer: read-only",
};
// The form's choice when none is sent: the least that still sends.
const DEFAULT_ROLE: KeyRole = "developer";

function KeyRow({ k, prefix, canRevoke }: { k: ApiKeyRow; prefix: string; canRevoke: boolean }) {
  const name = k.name ?? "(unnamed)";
  return (
    <tr class={k.revoked_at ? "muted" : undefined}>
      <td>{name}</td>
      <td>
        <code>{`${prefix}…${k.last_four}`}</code>
      </td>
      <td>{k.role}</td>
      <td>
        <Time iso={k.created_at} />
      </td>
      <td>{k.last_used_at ? <Time iso={k.last_used_at} /> : "never"}</td>
      <td>
        {k.revoked_at ? (
          <>
            revoked <Time iso={k.revoked_at} />
          </>
        ) : canRevoke ? (
          <ConfirmForm
            action={`/dashboard/api-keys/${k.id}/revoke`}
            question={`Revoke the key "${name}"? Requests using it fail within ${REVOKE_DELAY_S} seconds.`}
            label="Revoke"
          />
        ) : (
          "active"
        )}
      </td>
    </tr>
  );
}

async function renderKeys(
  c: Context<DashboardEnv>,
  form: { name?: string; role?: string; error?: string; roleError?: string } = {},
) {
  const { workspace_id: workspaceId, role } = c.get("session");
  const keys = await listKeys(c.env.DB, workspaceId);
  const canWrite = hasRole(role, "developer");
  const prefix = keyPrefix(c.env);
  // Newest first; revoked keys after the active ones.
  const sorted = [...keys].reverse().sort((a, b) => Number(a.revoked_at !== null) - Number(b.revoked_at !== null));
  return c.render(
    <>
      <h1>API keys</h1>
      <p>
        Keys authenticate requests to the API (<code>Authorization: Bearer {prefix}…</code>). A revoked key stops
        working within {REVOKE_DELAY_S} seconds. "Last used" is updated at most every 10 minutes.
      </p>
      <p>
        A key's role is fixed when it is made and is at most your own: <em>viewer</em> keys only read,{" "}
        <em>developer</em> keys also send and manage webhooks and sandbox test contacts, and only <em>owner</em> keys
        connect, re-key or disconnect numbers.
      </p>
      {canWrite ? (
        <section aria-labelledby="create-heading" class="card">
          <h2 id="create-heading">Create a key</h2>
          <form method="post" action="/dashboard/api-keys" class="row">
            <label for="key-name">Name</label>
            <input
              id="key-name"
              name="name"
              type="text"
              required
              maxlength={MAX_NAME_CHARS}
              placeholder="e.g. production backend"
              value={form.name ?? ""}
              aria-invalid={form.error ? "true" : undefined}
              aria-describedby={form.error ? "name-error" : undefined}
            />
            <label for="key-role">Role</label>
            <select
              id="key-role"
              name="role"
              aria-invalid={form.roleError ? "true" : undefined}
              aria-describedby={form.roleError ? "role-error" : undefined}
            >
              {grantableKeyRoles(role).map((r) => (
                <option value={r} selected={r === (form.role ?? DEFAULT_ROLE)}>
                  {ROLE_TEXT[r]}
                </option>
              ))}
            </select>
            <button type="submit">Create key</button>
          </form>
          <FieldError field="name" message={form.error} />
          <FieldError field="role" message={form.roleError} />
        </section>
      ) : null}
      <h2>Keys</h2>
      {sorted.length === 0 ? (
        <p>No keys yet.</p>
      ) : (
        <TableScroll label="API keys">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Role</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {sorted.map((k) => (
                <KeyRow k={k} prefix={prefix} canRevoke={canWrite} />
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>,
    { title: "API keys" },
  );
}

export const apiKeyPages = new Hono<DashboardEnv>()
  .get("/api-keys", (c) => renderKeys(c))
  .post("/api-keys", requireRole("developer"), async (c) => {
    const fields = await formFields(c);
    const name = (fields.name ?? "").trim();
    const role = KeyRoleSchema.safeParse(fields.role ?? DEFAULT_ROLE);
    const badName = name.length === 0 || name.length > MAX_NAME_CHARS;
    if (badName || !role.success) {
      c.status(400);
      return renderKeys(c, {
        name: name.slice(0, MAX_NAME_CHARS),
        error: badName ? `Give the key a name (1 to ${MAX_NAME_CHARS} characters).` : undefined,
        roleError: role.success ? undefined : "Choose the key's role: owner, developer or viewer.",
      });
    }
    const session = c.get("session");
    const issued = await issueApiKey(c.env, session.workspace_id, { name, role: role.data, maker: session.role });
    if (!issued.ok)
      return issued.problem === "role_above_maker"
        ? forbiddenPage(c, role.data)
        : rateLimitedPage(c, issued, "/dashboard/api-keys");
    await auditMember(c, {
      action: "api_key.created",
      target: { type: "api_key", id: issued.row.id },
      detail: keyCreatedDetail(issued.row),
    });
    await setFlash(
      c,
      { notice: `Key "${name}" (${role.data}) created.`, secret: { label: "Your new API key", value: issued.key } },
      session.token_hash,
    );
    return c.redirect("/dashboard/api-keys", 303);
  })
  .post("/api-keys/:id/revoke", requireRole("developer"), async (c) => {
    const session = c.get("session");
    const id = c.req.param("id");
    const key = await findByUuid(id, (stored) => getKey(c.env.DB, session.workspace_id, stored));
    if (!key) return notFoundPage(c);
    if ((await formFields(c)).confirmed !== "yes") {
      return confirmPage(c, {
        title: "Revoke key",
        question: `Revoke the key "${key.name ?? "(unnamed)"}" (…${key.last_four})? Requests using it fail within ${REVOKE_DELAY_S} seconds.`,
        action: `/dashboard/api-keys/${key.id}/revoke`,
        label: "Revoke key",
        back: "/dashboard/api-keys",
      });
    }
    if (!(await revokeApiKey(c.env.DB, key.id, session.workspace_id))) return notFoundPage(c);
    await auditMember(c, { action: "api_key.revoked", target: { type: "api_key", id: key.id }, detail: keyLabel(key) });
    await setFlash(
      c,
      { notice: `Key "${key.name ?? "(unnamed)"}" revoked; it stops working within ${REVOKE_DELAY_S} seconds.` },
      session.token_hash,
    );
    return c.redirect("/dashboard/api-keys", 303);
  });
