import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  emailKey,
  ipKey,
  MAX_SIGN_IN_MEMBERSHIPS,
  signInAttempt,
  SIGN_IN_EMAIL_LIMIT,
  SIGN_IN_IP_LIMIT,
  SIGN_IN_WINDOW_MS,
} from "../../src/features/sign-in/sign-in";
import { hashPassword, passwordKdf, PASSWORD_PARAMS } from "../../src/lib/password";
import { redeemInvitation } from "../../src/features/members/store";
import { hashInvitationToken } from "../../src/domain/members";
import { isoNow } from "../../src/lib/clock";
import { sha256Hex } from "../../src/lib/crypto";
import { admin, expectError, json } from "../helpers/http";
import { createWorkspace } from "../helpers/fixtures";
import { Browser, invite, PASSWORD, signedInMember, uniqueEmail } from "../helpers/dashboard";
import { fakeClock } from "../helpers/clock";
import { ABUSE_LIMITS, bucket, scopes } from "../../src/domain/abuse-limits";
import { takeToken } from "../../src/lib/throttle-client";

afterEach(() => {
  vi.restoreAllMocks();
});

const freshIp = () => `203.0.113.${Math.floor(Math.random() * 250) + 1}-${crypto.randomUUID().slice(0, 4)}`;
const signIn = (b: Browser, email: string, password: string, ip = freshIp()) =>
  b.post("/dashboard/sign-in", { email, password }, { ip });

const sessionCookieLine = (res: Response) => res.headers.getSetCookie().find((l) => l.startsWith("__Host-session="));

describe("invitations", () => {
  it("an invitation link's token never reaches our logs: the access log redacts it from the path", async () => {
    const workspaceId = await createWorkspace();
    const { path } = await invite(workspaceId, uniqueEmail("logged"), "viewer");
    const token = path.split("/").at(-1)!;
    const lines: string[] = [];
    for (const method of ["log", "warn", "error", "info", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    }
    const b = new Browser();
    expect((await b.get(path)).status).toBe(200);
    expect((await b.post(path, { password: PASSWORD, confirm: PASSWORD })).status).toBe(303);
    expect((await b.get(path)).status).toBe(404);
    const access = lines.filter((l) => l.includes('"msg":"request"') && l.includes("/dashboard/invitations/"));
    expect(access.map((l) => JSON.parse(l).path)).toEqual(Array(3).fill("/dashboard/invitations/[redacted]"));
    expect(lines.join("\n")).not.toContain(token);
  });

  it("the admin API returns a single-use link; its token is stored hashed; setting a password signs the member in", async () => {
    const workspaceId = await createWorkspace();
    const email = uniqueEmail("invited");
    const res = await admin(`/workspaces/${workspaceId}/members`, {
      method: "POST",
      json: { email, role: "developer" },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = await json<{
      invitationUrl: string;
      expiresAt: string;
      member: { email: string; role: string; passwordSet: boolean };
    }>(res);
    expect(body.member).toMatchObject({ email, role: "developer", passwordSet: false });
    const path = new URL(body.invitationUrl).pathname;
    const token = path.split("/").at(-1)!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(body.expiresAt) - Date.now()).toBeGreaterThan(7 * 24 * 3_600_000 - 60_000);
    const row = await env.DB.prepare("SELECT invitation_hash, password_hash FROM members WHERE email = ?")
      .bind(email)
      .first<{ invitation_hash: string; password_hash: string | null }>();
    expect(row).toEqual({ invitation_hash: await sha256Hex(token), password_hash: null });

    const b = new Browser();
    const page = await b.get(path);
    expect(page.status).toBe(200);
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    expect(await page.text()).toContain(email);

    const done = await b.post(path, { password: PASSWORD, confirm: PASSWORD });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/dashboard");
    const cookie = sessionCookieLine(done)!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).not.toMatch(/Domain=/i);
    expect((await b.get("/dashboard")).status).toBe(200);

    const stored = await env.DB.prepare("SELECT invitation_hash, password_hash FROM members WHERE email = ?")
      .bind(email)
      .first<{ invitation_hash: string | null; password_hash: string }>();
    expect(stored!.invitation_hash).toBeNull();
    expect(stored!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);

    // Single use.
    expect((await new Browser().get(path)).status).toBe(404);
    expect(
      (await new Browser().post(path, { password: "another long password", confirm: "another long password" })).status,
    ).toBe(404);
  });

  it("a link stops working after 7 days", async () => {
    const workspaceId = await createWorkspace();
    const clock = fakeClock();
    const { path } = await invite(workspaceId, uniqueEmail("late"), "viewer");
    clock.set(Date.now() + 7 * 24 * 3_600_000 + 1_000);
    expect((await new Browser().get(path)).status).toBe(404);
    expect((await new Browser().post(path, { password: PASSWORD, confirm: PASSWORD })).status).toBe(404);
  });

  it("refuses a short or mismatched password and keeps the link", async () => {
    const workspaceId = await createWorkspace();
    const { path } = await invite(workspaceId, uniqueEmail("weak"), "viewer");
    const b = new Browser();
    const short = await b.post(path, { password: "short", confirm: "short" });
    expect(short.status).toBe(400);
    expect(await short.text()).toContain("Use at least 12 characters.");
    const mismatch = await b.post(path, { password: PASSWORD, confirm: `${PASSWORD}!` });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).toContain("The two passwords differ.");
    expect(sessionCookieLine(mismatch)).toBeUndefined();
    expect((await b.post(path, { password: PASSWORD, confirm: PASSWORD })).status).toBe(303);
  });

  it("a new link for an existing member resets them: old password and sessions stop working, the new role applies", async () => {
    const workspaceId = await createWorkspace();
    const member = await signedInMember(workspaceId, "developer");
    expect((await member.browser.get("/dashboard")).status).toBe(200);
    const { path } = await invite(workspaceId, member.email, "viewer");
    // The session ended at once.
    const after = await member.browser.get("/dashboard");
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toBe("/dashboard/sign-in");
    // The old password no longer signs in.
    expect((await signIn(new Browser(), member.email, PASSWORD)).status).toBe(401);
    const b = new Browser();
    expect((await b.post(path, { password: "a brand new passphrase", confirm: "a brand new passphrase" })).status).toBe(
      303,
    );
    expect(await (await b.get("/dashboard/account")).text()).toContain("viewer");
  });

  it("re-inviting the last owner with another role is refused, and ends none of their sessions; with a second owner it works", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const res = await admin(`/workspaces/${workspaceId}/members`, {
      method: "POST",
      json: { email: owner.email, role: "viewer" },
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details?.[0]?.rule).toBe("last_owner");
    const owners = await env.DB.prepare("SELECT COUNT(*) AS n FROM members WHERE workspace_id = ? AND role = 'owner'")
      .bind(workspaceId)
      .first<{ n: number }>();
    expect(owners?.n).toBe(1);
    expect((await owner.browser.get("/dashboard")).status).toBe(200);
    // With a second owner, the first one can be re-invited with another role.
    await signedInMember(workspaceId, "owner");
    expect(
      (
        await admin(`/workspaces/${workspaceId}/members`, {
          method: "POST",
          json: { email: owner.email, role: "viewer" },
        })
      ).status,
    ).toBe(201);
  });

  it("the admin API validates the body and the workspace", async () => {
    const workspaceId = await createWorkspace();
    const email = uniqueEmail("taken");
    await invite(workspaceId, email, "viewer");
    const other = await createWorkspace();
    await expectError(
      await admin(`/workspaces/${other}/members`, { method: "POST", json: { email: "not-an-email", role: "viewer" } }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin(`/workspaces/${other}/members`, { method: "POST", json: { email: uniqueEmail(), role: "admin" } }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin(`/workspaces/${crypto.randomUUID()}/members`, {
        method: "POST",
        json: { email: uniqueEmail(), role: "viewer" },
      }),
      404,
      "not_found",
    );
    const list = await json<{ data: { email: string; passwordSet: boolean }[] }>(
      await admin(`/workspaces/${workspaceId}/members`),
    );
    expect(list.data.find((m) => m.email === email)).toMatchObject({ passwordSet: false });
    expect(JSON.stringify(list)).not.toMatch(/argon2|invitation_hash/);
  });
});

describe("sign-in", () => {
  it("a correct password signs in and goes to the requested dashboard page; a wrong one does not", async () => {
    const workspaceId = await createWorkspace();
    const { email } = await signedInMember(workspaceId, "viewer");
    const b = new Browser();
    const wrong = await signIn(b, email, "not the password at all");
    expect(wrong.status).toBe(401);
    expect(sessionCookieLine(wrong)).toBeUndefined();
    expect(await wrong.text()).toContain("Email or password is incorrect.");

    const ok = await b.post(
      "/dashboard/sign-in",
      { email: email.toUpperCase(), password: PASSWORD, next: "/dashboard/api-keys" },
      { ip: freshIp() },
    );
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/dashboard/api-keys");
    expect(sessionCookieLine(ok)).toBeDefined();
    expect((await b.get("/dashboard/api-keys")).status).toBe(200);
  });

  it("never redirects off the dashboard after sign-in", async () => {
    const workspaceId = await createWorkspace();
    const { email } = await signedInMember(workspaceId, "viewer");
    for (const next of ["https://evil.example/", "//evil.example", "/dashboard/../admin", "/dashboard\\@evil"]) {
      const res = await new Browser().post(
        "/dashboard/sign-in",
        { email, password: PASSWORD, next },
        { ip: freshIp() },
      );
      expect(res.headers.get("location")).toBe("/dashboard");
    }
  });

  it("does not tell an unknown email from a wrong password: same status, same page, the same one argon2id derivation", async () => {
    const workspaceId = await createWorkspace();
    const { email: known } = await signedInMember(workspaceId, "viewer");
    const { email: invitedOnly } = { email: uniqueEmail("pending") };
    await invite(workspaceId, invitedOnly, "viewer");
    const unknown = uniqueEmail("nobody");
    const derive = vi.spyOn(passwordKdf, "derive");

    const answers: { status: number; body: string; derivations: unknown[][] }[] = [];
    for (const email of [known, unknown, invitedOnly]) {
      derive.mockClear();
      const res = await signIn(new Browser(), email, "a wrong password, surely");
      answers.push({
        status: res.status,
        body: (await res.text()).replaceAll(email, "EMAIL").replace(/req_[0-9a-f]+/g, "REQ"),
        derivations: derive.mock.calls.map(([, salt, params]) => [salt.length, params]),
      });
    }
    expect(answers[0]!.status).toBe(401);
    expect(answers[0]!.derivations).toEqual([[16, PASSWORD_PARAMS]]);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it(`throttles an email after ${SIGN_IN_EMAIL_LIMIT} attempts in 15 minutes, known or not, even with the right password`, async () => {
    const workspaceId = await createWorkspace();
    const clock = fakeClock();
    const { email: known } = await signedInMember(workspaceId, "viewer");
    const unknown = uniqueEmail("ghost");
    for (let i = 0; i < SIGN_IN_EMAIL_LIMIT; i++)
      expect((await signIn(new Browser(), known, "wrong password again")).status).toBe(401);
    // The unknown email's attempts, counted the way sign-in counts them (the same code path, without ten more hashes).
    for (let i = 0; i < SIGN_IN_EMAIL_LIMIT; i++)
      await signInAttempt(env, await emailKey(unknown), SIGN_IN_EMAIL_LIMIT);
    const derive = vi.spyOn(passwordKdf, "derive");
    const throttled = await Promise.all([known, unknown].map((email) => signIn(new Browser(), email, PASSWORD)));
    const bodies = await Promise.all(
      throttled.map(async (r, i) => (await r.text()).replaceAll([known, unknown][i]!, "EMAIL")),
    );
    expect(throttled.map((r) => r.status)).toEqual([429, 429]);
    // A burst of 10, then one attempt more every 15 min / 10 = 90 s.
    const refill = SIGN_IN_WINDOW_MS / SIGN_IN_EMAIL_LIMIT;
    expect(throttled.map((r) => r.headers.get("retry-after"))).toEqual([String(refill / 1000), String(refill / 1000)]);
    expect(bodies[0]).toBe(bodies[1]);
    expect(bodies[0]).toContain("Too many sign-in attempts");
    expect(derive).not.toHaveBeenCalled();
    expect(sessionCookieLine(throttled[0]!)).toBeUndefined();

    clock.set(Date.now() + refill - 1_000);
    expect((await signIn(new Browser(), known, PASSWORD)).status).toBe(429);
    clock.set(Date.now() + 1_000);
    expect((await signIn(new Browser(), known, PASSWORD)).status).toBe(303);
  });

  it("a success refills nothing: signing in to a membership another workspace's owner made buys no guesses at the others", async () => {
    const [victimWs, otherWs] = await Promise.all([
      createWorkspace({ name: "Victim" }),
      createWorkspace({ name: "Other" }),
    ]);
    const victim = await signedInMember(victimWs, "owner");
    const otherOwner = await signedInMember(otherWs, "owner");
    // The other workspace's owner invites the victim's address and redeems the link with a password of their own.
    expect((await otherOwner.browser.post("/dashboard/members", { email: victim.email, role: "viewer" })).status).toBe(
      303,
    );
    const link = /\/dashboard\/invitations\/[A-Za-z0-9_-]{43}/.exec(
      await (await otherOwner.browser.get("/dashboard/members")).text(),
    )?.[0];
    const THEIRS = "a passphrase the other owner chose";
    expect((await new Browser().post(link!, { password: THEIRS, confirm: THEIRS })).status).toBe(303);

    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_EMAIL_LIMIT - 1; i++)
      statuses.push((await signIn(new Browser(), victim.email, `guess ${i}`)).status);
    // Their own membership opens (303) and spends an attempt like any other.
    statuses.push((await signIn(new Browser(), victim.email, THEIRS)).status);
    expect(statuses).toEqual([...Array<number>(SIGN_IN_EMAIL_LIMIT - 1).fill(401), 303]);
    for (const password of ["guess 10", THEIRS, PASSWORD])
      expect((await signIn(new Browser(), victim.email, password)).status, password).toBe(429);
  });

  it("memberships an address got later never push its older one out of sign-in", async () => {
    const victimWs = await createWorkspace({ name: "Victim" });
    const victim = await signedInMember(victimWs, "owner");
    const other = await hashPassword("some other passphrase entirely");
    for (let i = 0; i < MAX_SIGN_IN_MEMBERSHIPS; i++) {
      const { path } = await invite(await createWorkspace({ name: `Later ${i}` }), victim.email, "viewer");
      const token = path.split("/").at(-1)!;
      expect(await redeemInvitation(env.DB, await hashInvitationToken(token), other, isoNow())).not.toBeNull();
    }
    const b = new Browser();
    const res = await signIn(b, victim.email, PASSWORD);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard");
    expect(await (await b.get("/dashboard")).text()).toContain("Victim");
  });

  it("failed sign-ins reach the audit log of every workspace whose membership was tried, at most 20 an hour each", async () => {
    const [a, b] = await Promise.all([createWorkspace({ name: "Alpha" }), createWorkspace({ name: "Beta" })]);
    const email = uniqueEmail("person");
    const inA = await signedInMember(a, "developer", email);
    const inB = await signedInMember(b, "viewer", email);
    const ownerA = await signedInMember(a, "owner");
    const failures = async (workspaceId: string) =>
      (
        await env.DB.prepare(
          "SELECT actor_type, actor_id, actor_label, target_id, client_address FROM audit_log WHERE workspace_id = ? AND action = 'member.sign_in_failed' ORDER BY seq",
        )
          .bind(workspaceId)
          .all()
      ).results;
    const ip = freshIp();
    expect((await signIn(new Browser(), email, "not my password", ip)).status).toBe(401);
    await vi.waitFor(async () => expect(await failures(b)).toHaveLength(1), { timeout: 5_000, interval: 50 });
    await vi.waitFor(async () => expect(await failures(a)).toHaveLength(1), { timeout: 5_000, interval: 50 });
    expect((await failures(a))[0]).toEqual({
      actor_type: "member",
      actor_id: inA.memberId,
      actor_label: email,
      target_id: inA.memberId,
      client_address: ip,
    });
    const page = await (await ownerA.browser.get("/dashboard/audit")).text();
    expect(page).toContain("sign-in failed (wrong password)");
    expect(page).toContain(ip);

    // A's trace budget is spent: a further failure is recorded in B only.
    const { limit } = ABUSE_LIMITS.signInFailureTrace;
    expect(limit).toBe(20);
    await takeToken(env, scopes.workspace(a), [bucket("signInFailureTrace")], limit - 1);
    expect((await signIn(new Browser(), email, "still not my password")).status).toBe(401);
    await vi.waitFor(async () => expect(await failures(b)).toHaveLength(2), { timeout: 5_000, interval: 50 });
    expect(await failures(a)).toHaveLength(1);
    expect((await failures(b)).map((r) => r.target_id)).toEqual([inB.memberId, inB.memberId]);
    // The right password is no failure.
    expect((await signIn(new Browser(), email, PASSWORD)).status).toBe(303);
  });

  it(`throttles a client IP (CF-Connecting-IP) after ${SIGN_IN_IP_LIMIT} attempts, whatever the emails`, async () => {
    const workspaceId = await createWorkspace();
    const ip = freshIp();
    // The IP's earlier attempts, counted the way sign-in counts them.
    for (let i = 0; i < SIGN_IN_IP_LIMIT; i++)
      expect((await signInAttempt(env, ipKey(ip), SIGN_IN_IP_LIMIT)).allowed).toBe(true);
    const { email } = await signedInMember(workspaceId, "viewer");
    const refused = await signIn(new Browser(), email, PASSWORD, ip);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await signIn(new Browser(), email, PASSWORD, freshIp())).status).toBe(303);
  });

  it("counts an IPv6 client by its /64, as the API's limits do (one subscriber holds the whole /64)", async () => {
    const workspaceId = await createWorkspace();
    const prefix = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:1`;
    // The /64's earlier attempts, from its first address.
    for (let i = 0; i < SIGN_IN_IP_LIMIT; i++)
      expect((await signInAttempt(env, ipKey(`${prefix}::/64`), SIGN_IN_IP_LIMIT)).allowed).toBe(true);
    const { email } = await signedInMember(workspaceId, "viewer");
    // Another address of the same /64 (written out in full) is refused...
    const refused = await signIn(new Browser(), email, PASSWORD, `${prefix}:0:0:0:2`);
    expect(refused.status).toBe(429);
    // ...while another /64 is not.
    expect((await signIn(new Browser(), email, PASSWORD, `2001:db8:ffff:2::2`)).status).toBe(303);
  });

  it("empty fields get a 400 without any attempt counted", async () => {
    const res = await new Browser().post("/dashboard/sign-in", { email: "", password: "" });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Enter your email and password.");
  });
});
