// The dashboard sign-in for `npm run dev`: the demo workspace gets an owner
// once, idempotently, like the demo key. While that owner has no password, each
// run prints a fresh single-use invitation link (nothing to reset yet); once the
// password is set, runs print the sign-in page instead, because a new link
// would clear the password. Node built-ins only.

/** One address per demo workspace (an email belongs to one workspace). */
const ownerEmail = (/** @type {string} */ workspaceId) => `owner.${workspaceId.slice(0, 8)}@example.com`;

/** @typedef {{ email: string, url: string, passwordSet: boolean }} DashboardSignIn */

/**
 * `call(method, path, token, body)` as in scripts/lib/http-call.mjs, bound to the dev server.
 * @param {(method: string, path: string, token: string, body?: unknown) => Promise<import("./http-call.mjs").ApiAnswer>} call
 * @param {string} adminToken @param {string} baseUrl @param {string} workspaceId
 * @returns {Promise<DashboardSignIn>}
 */
export async function demoDashboardSignIn(call, adminToken, baseUrl, workspaceId) {
  const email = ownerEmail(workspaceId);
  const members = await call("GET", `/admin/v1/workspaces/${workspaceId}/members`, adminToken);
  if (members.status !== 200)
    throw new Error(`listing the demo workspace's members answered ${members.status}: ${members.text.slice(0, 300)}`);
  if (
    members.json.data.some(
      (/** @type {{ email: string, passwordSet: boolean }} */ m) => m.email === email && m.passwordSet,
    )
  ) {
    return { email, url: `${baseUrl}/dashboard/sign-in`, passwordSet: true };
  }
  const invited = await call("POST", `/admin/v1/workspaces/${workspaceId}/members`, adminToken, {
    email,
    role: "owner",
  });
  if (invited.status !== 201)
    throw new Error(`inviting the demo owner answered ${invited.status}: ${invited.text.slice(0, 300)}`);
  return { email, url: invited.json.invitationUrl, passwordSet: false };
}

/** @param {DashboardSignIn} signIn */
export function dashboardBanner({ email, url, passwordSet }) {
  return [
    "  Dashboard (owner of the demo workspace):",
    passwordSet ? `    ${url}   sign in as ${email} with the password you set` : `    ${url}`,
    passwordSet
      ? "    (forgot it? delete .dev-demo.json and restart for a new workspace)"
      : `    set a password there (single use, 7 days); then sign in as ${email}`,
    "=".repeat(78),
    "",
  ].join("\n");
}
