import { env } from "cloudflare:workers";
import { redeemInvitation } from "../../src/features/members/store";
import { openSession } from "../../src/features/sign-in/sessions";
import { hashInvitationToken } from "../../src/domain/members";
import { isoNow } from "../../src/lib/clock";
import { hashPassword } from "../../src/lib/password";
import { BASE, admin, call, json } from "./http";

export const PASSWORD = "a long enough passphrase";

/**
 * A minimal browser for dashboard tests: keeps cookies (honouring Max-Age=0
 * deletions), sends form posts the way a same-origin page does (Origin and
 * Sec-Fetch-Site), and never follows redirects, so tests see each response.
 */
export class Browser {
  readonly cookies = new Map<string, string>();

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  private keep(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq).trim();
      const deleted = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (deleted) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(eq + 1).trim());
    }
    return res;
  }

  /** A navigation or a subresource load; `extra`: headers a browser adds on its own (If-None-Match). */
  async get(path: string, extra: Record<string, string> = {}): Promise<Response> {
    const headers = new Headers({ ...extra, "Sec-Fetch-Site": "same-origin" });
    if (this.cookies.size) headers.set("Cookie", this.cookieHeader());
    return this.keep(await call(path, { headers, redirect: "manual" }));
  }

  /**
   * A form POST; `from` sets where the browser says it comes from (null: no
   * Origin / Sec-Fetch-Site at all); `raw` sends another body type instead.
   */
  async post(
    path: string,
    fields: Record<string, string> = {},
    from: { origin?: string | null; site?: string | null; ip?: string; raw?: { type: string; body: string } } = {},
  ): Promise<Response> {
    const headers = new Headers({ "Content-Type": from.raw?.type ?? "application/x-www-form-urlencoded" });
    const origin = from.origin === undefined ? BASE : from.origin;
    const site = from.site === undefined ? "same-origin" : from.site;
    if (origin !== null) headers.set("Origin", origin);
    if (site !== null) headers.set("Sec-Fetch-Site", site);
    if (from.ip) headers.set("CF-Connecting-IP", from.ip);
    if (this.cookies.size) headers.set("Cookie", this.cookieHeader());
    const body = from.raw ? from.raw.body : new URLSearchParams(fields);
    return this.keep(await call(path, { method: "POST", headers, body, redirect: "manual" }));
  }
}

export const uniqueEmail = (tag = "member") => `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;

/** Invites through the admin API; returns the path of the invitation link. */
export async function invite(
  workspaceId: string,
  email: string,
  role: "owner" | "developer" | "viewer",
): Promise<{ path: string; memberId: string }> {
  const res = await admin(`/workspaces/${workspaceId}/members`, { method: "POST", json: { email, role } });
  if (res.status !== 201) throw new Error(`invite: ${res.status} ${await res.text()}`);
  const body = await json<{ invitationUrl: string; member: { id: string } }>(res);
  return { path: new URL(body.invitationUrl).pathname, memberId: body.member.id };
}

export interface Member {
  browser: Browser;
  email: string;
  memberId: string;
}

// argon2id costs ~200 ms or more a hash: PASSWORD is hashed once per test file and the
// read-only result is what every member's password is set to.
let passwordHash: Promise<string> | undefined;

/**
 * A member of the workspace with `role`, signed in: invited through the admin
 * API, then its link redeemed and a session opened with the service's own
 * functions, as the invitation page does, without hashing the password again
 * (the page itself is tested in dashboard/sign-in-and-invitations.test.ts). The password is PASSWORD.
 * Pass an `email` to make the same person a member of several workspaces.
 */
export async function signedInMember(
  workspaceId: string,
  role: "owner" | "developer" | "viewer",
  email = uniqueEmail(role),
): Promise<Member> {
  const { path, memberId } = await invite(workspaceId, email, role);
  const token = path.split("/").at(-1)!;
  const redeemed = await redeemInvitation(
    env.DB,
    await hashInvitationToken(token),
    await (passwordHash ??= hashPassword(PASSWORD)),
    isoNow(),
  );
  if (!redeemed) throw new Error(`invitation of ${email} not redeemed`);
  const session = await openSession(env.DB, memberId, { revokeOthers: true });
  await env.DB.batch(session.statements);
  const browser = new Browser();
  browser.cookies.set("__Host-session", session.token);
  return { browser, email, memberId };
}

/** The text of an HTML page, for assertions. */
export const html = (res: Response): Promise<string> => res.text();
