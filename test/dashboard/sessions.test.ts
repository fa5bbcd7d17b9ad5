import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, SESSION_TOUCH_EVERY_MS } from "../../src/features/sign-in/sessions";
import { sha256Hex } from "../../src/lib/crypto";
import { createWorkspace } from "../helpers/fixtures";
import { Browser, PASSWORD, signedInMember } from "../helpers/dashboard";
import { fakeClock } from "../helpers/clock";

const HOUR = 3_600_000;
const signedOut = (res: Response) => res.status === 303 && res.headers.get("location") === "/dashboard/sign-in";

/** A browser that presents the same session cookie (a copy of a stolen or old cookie). */
function copyOf(b: Browser): Browser {
  const copy = new Browser();
  for (const [k, v] of b.cookies) copy.cookies.set(k, v);
  return copy;
}

const lastSeen = async (b: Browser) =>
  (
    await env.DB.prepare("SELECT last_seen_at FROM dashboard_sessions WHERE token_hash = ?")
      .bind(await sha256Hex(b.cookies.get("__Host-session")!))
      .first<{ last_seen_at: string }>()
  )?.last_seen_at;

describe("sessions", () => {
  it("are stored hashed: the cookie's token is not in D1", async () => {
    const workspaceId = await createWorkspace();
    const { browser } = await signedInMember(workspaceId, "viewer");
    const token = browser.cookies.get("__Host-session")!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await env.DB.prepare("SELECT * FROM dashboard_sessions WHERE token_hash = ?")
      .bind(await sha256Hex(token))
      .all();
    expect(rows.results).toHaveLength(1);
    expect(JSON.stringify(rows.results)).not.toContain(token);
  });

  it(`end after ${SESSION_IDLE_MS / HOUR} hours without a request`, async () => {
    const workspaceId = await createWorkspace();
    const clock = fakeClock();
    const { browser } = await signedInMember(workspaceId, "viewer");
    const t0 = Date.now();
    clock.set(t0 + SESSION_IDLE_MS - 60_000);
    expect((await browser.get("/dashboard")).status).toBe(200);
    // Used just now: another nearly-12-hour pause is fine.
    clock.set(t0 + 2 * SESSION_IDLE_MS - 120_000);
    expect((await browser.get("/dashboard")).status).toBe(200);
    clock.set(t0 + 3 * SESSION_IDLE_MS);
    expect(signedOut(await browser.get("/dashboard"))).toBe(true);
    expect(browser.cookies.has("__Host-session")).toBe(false);
  });

  it(`end ${SESSION_ABSOLUTE_MS / (24 * HOUR)} days after sign-in, however active`, async () => {
    const workspaceId = await createWorkspace();
    const clock = fakeClock();
    const { browser } = await signedInMember(workspaceId, "viewer");
    const t0 = Date.now();
    for (let at = 10 * HOUR; at < SESSION_ABSOLUTE_MS; at += 10 * HOUR) {
      clock.set(t0 + at);
      expect((await browser.get("/dashboard")).status).toBe(200);
    }
    clock.set(t0 + SESSION_ABSOLUTE_MS);
    expect(signedOut(await browser.get("/dashboard"))).toBe(true);
  });

  it(`write their last use at most every ${SESSION_TOUCH_EVERY_MS / 60_000} minutes, not on every request`, async () => {
    const workspaceId = await createWorkspace();
    const clock = fakeClock();
    const { browser } = await signedInMember(workspaceId, "viewer");
    const first = await lastSeen(browser);
    const t0 = Date.now();
    clock.set(t0 + SESSION_TOUCH_EVERY_MS - 1_000);
    for (let i = 0; i < 3; i++) expect((await browser.get("/dashboard")).status).toBe(200);
    expect(await lastSeen(browser)).toBe(first);
    clock.set(t0 + SESSION_TOUCH_EVERY_MS);
    expect((await browser.get("/dashboard")).status).toBe(200);
    expect(await lastSeen(browser)).toBe(new Date(t0 + SESSION_TOUCH_EVERY_MS).toISOString());
  });

  it("end at sign-out: the same cookie no longer works anywhere", async () => {
    const workspaceId = await createWorkspace();
    const { browser } = await signedInMember(workspaceId, "viewer");
    const stolen = copyOf(browser);
    const out = await browser.post("/dashboard/sign-out");
    expect(out.status).toBe(303);
    expect(browser.cookies.has("__Host-session")).toBe(false);
    expect(signedOut(await stolen.get("/dashboard"))).toBe(true);
  });

  it("end everywhere else at a password change; the browser that changed it stays signed in", async () => {
    const workspaceId = await createWorkspace();
    const { browser, email } = await signedInMember(workspaceId, "developer");
    const elsewhere = new Browser();
    expect(
      (await elsewhere.post("/dashboard/sign-in", { email, password: PASSWORD }, { ip: "198.51.100.7" })).status,
    ).toBe(303);
    const old = copyOf(browser);

    const wrong = await browser.post("/dashboard/account/password", {
      current: "not my password",
      password: "a new passphrase here",
      confirm: "a new passphrase here",
    });
    expect(wrong.status).toBe(400);
    expect((await elsewhere.get("/dashboard")).status).toBe(200);

    const changed = await browser.post("/dashboard/account/password", {
      current: PASSWORD,
      password: "a new passphrase here",
      confirm: "a new passphrase here",
    });
    expect(changed.status).toBe(303);
    expect((await browser.get("/dashboard/account")).status).toBe(200);
    expect(signedOut(await elsewhere.get("/dashboard"))).toBe(true);
    expect(signedOut(await old.get("/dashboard"))).toBe(true);
    expect(
      (await new Browser().post("/dashboard/sign-in", { email, password: PASSWORD }, { ip: "198.51.100.8" })).status,
    ).toBe(401);
    expect(
      (
        await new Browser().post(
          "/dashboard/sign-in",
          { email, password: "a new passphrase here" },
          { ip: "198.51.100.9" },
        )
      ).status,
    ).toBe(303);
  });

  it("end when the member is removed", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const member = await signedInMember(workspaceId, "developer");
    expect((await member.browser.get("/dashboard")).status).toBe(200);
    const removed = await owner.browser.post(`/dashboard/members/${member.memberId}/remove`, { confirmed: "yes" });
    expect(removed.status).toBe(303);
    expect(signedOut(await member.browser.get("/dashboard"))).toBe(true);
    expect(
      (
        await new Browser().post(
          "/dashboard/sign-in",
          { email: member.email, password: PASSWORD },
          { ip: "198.51.100.10" },
        )
      ).status,
    ).toBe(401);
  });

  it("an unknown or malformed cookie is sent to sign in, remembering the page", async () => {
    const b = new Browser();
    b.cookies.set("__Host-session", "x".repeat(43));
    const res = await b.get("/dashboard/webhooks");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard/sign-in?next=%2Fdashboard%2Fwebhooks");
    b.cookies.set("__Host-session", "<script>");
    expect(signedOut(await b.get("/dashboard"))).toBe(true);
  });
});
