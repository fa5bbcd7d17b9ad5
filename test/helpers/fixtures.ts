import { env } from "cloudflare:workers";
import { addTestContact } from "../../src/db/sandbox-test-contacts";
import { admin, json } from "./http";

/** The recipient most tests send to: a test contact of every tenant's sandbox number (see createTenant). */
export const TEST_CONTACT = "5511999998888";
/** The suites' other usual recipient, also a test contact of every tenant's number. */
export const TEST_CONTACT_2 = "5511000000001";

export interface Tenant {
  workspaceId: string;
  key: string;
  keyId: string;
  numberId: string;
}

export async function createWorkspace(
  opts: { plan?: string; monthlyMessageQuota?: number; name?: string } = {},
): Promise<string> {
  const res = await admin("/workspaces", {
    method: "POST",
    json: {
      name: opts.name ?? "Acme",
      plan: opts.plan ?? "pro",
      ...(opts.monthlyMessageQuota !== undefined ? { monthlyMessageQuota: opts.monthlyMessageQuota } : {}),
    },
  });
  if (res.status !== 201) throw new Error(`workspace: ${res.status} ${await res.text()}`);
  return (await json<{ id: string }>(res)).id;
}

export async function createKey(workspaceId: string): Promise<{ key: string; id: string }> {
  const res = await admin(`/workspaces/${workspaceId}/api-keys`, { method: "POST", json: { name: "test" } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${await res.text()}`);
  return json<{ key: string; id: string }>(res);
}

export async function connectSandboxNumber(workspaceId: string, display = "15550001111"): Promise<string> {
  const res = await admin(`/workspaces/${workspaceId}/channel-numbers`, {
    method: "POST",
    json: { displayPhoneNumber: display, upstream: { type: "sandbox" } },
  });
  if (res.status !== 201) throw new Error(`number: ${res.status} ${await res.text()}`);
  return (await json<{ id: string }>(res)).id;
}

/**
 * A fresh workspace with one API key and one sandbox number, whose usual recipient (TEST_CONTACT)
 * and TEST_CONTACT_2 are test contacts, as `npm run dev` makes the demo's: sends to it are not held to the 24-hour
 * window. Any other recipient is, as on a live number.
 */
export async function createTenant(opts: { plan?: string; monthlyMessageQuota?: number } = {}): Promise<Tenant> {
  const workspaceId = await createWorkspace(opts);
  // Independent of each other: made at once (most tests make a tenant of their own).
  const [{ key, id: keyId }, numberId] = await Promise.all([createKey(workspaceId), connectSandboxNumber(workspaceId)]);
  // Straight into D1, not through the API: that would spend the key's request budget and add an audit entry.
  await markTestContacts(numberId, TEST_CONTACT, TEST_CONTACT_2);
  return { workspaceId, key, keyId, numberId };
}

/**
 * Makes `phones` test contacts of a sandbox number (straight into D1, within the bound), for suites
 * whose recipients never write: the sandbox would otherwise fail them with service_window_closed.
 */
export async function markTestContacts(numberId: string, ...phones: string[]): Promise<void> {
  for (const phone of phones) {
    const outcome = await addTestContact(env.DB, numberId, phone, new Date().toISOString());
    if (outcome === "full") throw new Error(`${numberId} already has the most test contacts allowed`);
  }
}
