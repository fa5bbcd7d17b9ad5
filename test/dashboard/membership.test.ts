import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, expectError } from "../helpers/http";
import { createWorkspace } from "../helpers/fixtures";
import { Browser, invite, PASSWORD, signedInMember, uniqueEmail } from "../helpers/dashboard";

afterEach(() => {
  vi.restoreAllMocks();
});

const freshIp = () => `198.51.100.${Math.floor(Math.random() * 250) + 1}-${crypto.randomUUID().slice(0, 4)}`;
const signIn = (b: Browser, email: string, password = PASSWORD) =>
  b.post("/dashboard/sign-in", { email, password }, { ip: freshIp() });

/** The same person (one email) as a signed-up member of several workspaces, all with PASSWORD. */
async function personIn(workspaces: string[], role: "owner" | "developer" | "viewer" = "developer") {
  const email = uniqueEmail("person");
  const ids: string[] = [];
  for (const w of workspaces) {
    const m = await signedInMember(w, role, email);
    ids.push(m.memberId);
  }
  return { email, memberIds: ids };
}

describe("membership is per workspace", () => {
  it("inviting an address gets the same answer whether or not it belongs to another workspace, and changes nothing there", async () => {
    const [a, b] = await Promise.all([createWorkspace({ name: "Alpha" }), createWorkspace({ name: "Beta" })]);
    const taken = await signedInMember(a, "owner");
    const ownerB = await signedInMember(b, "owner");
    const rowsOfA = async () =>
      (await env.DB.prepare("SELECT * FROM members WHERE workspace_id = ? ORDER BY id").bind(a).all()).results;
    const before = await rowsOfA();
    const answers = [];
    for (const email of [taken.email, uniqueEmail("nobody")]) {
      const res = await ownerB.browser.post("/dashboard/members", { email, role: "viewer" });
      const page = await (await ownerB.browser.get("/dashboard/members")).text();
      answers.push({
        status: res.status,
        location: res.headers.get("location"),
        notice: /Invitation for \S+ \(viewer\) created/.test(page),
      });
      const adminRes = await admin(`/workspaces/${b}/members`, { method: "POST", json: { email, role: "developer" } });
      expect(adminRes.status).toBe(201);
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]).toEqual({ status: 303, location: "/dashboard/members", notice: true });
    // Workspace A's member is untouched: same row, and still signed in there.
    expect(await rowsOfA()).toEqual(before);
    expect((await taken.browser.get("/dashboard")).status).toBe(200);
  });

  it("one email in two workspaces with the same password: sign-in asks which workspace, and opens only what was proved", async () => {
    const [a, b, c] = await Promise.all([
      createWorkspace({ name: "Alpha" }),
      createWorkspace({ name: "Beta" }),
      createWorkspace({ name: "Gamma" }),
    ]);
    const person = await personIn([a, b]);
    // A third membership whose password was never set is not offered.
    await invite(c, person.email, "owner");
    const browser = new Browser();
    const res = await signIn(browser, person.email);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard/choose-workspace");
    expect(browser.cookies.has("__Host-session")).toBe(false);
    const picker = await (await browser.get("/dashboard/choose-workspace")).text();
    expect(picker).toContain("Alpha");
    expect(picker).toContain("Beta");
    expect(picker).not.toContain("Gamma");

    // A membership the sign-in did not prove cannot be chosen.
    const forged = await browser.post("/dashboard/choose-workspace", { memberId: crypto.randomUUID() });
    expect(forged.headers.get("location")).toBe("/dashboard/sign-in");
    expect(browser.cookies.has("__Host-session")).toBe(false);

    const chosen = await browser.post("/dashboard/choose-workspace", { memberId: person.memberIds[1]! });
    expect(chosen.status).toBe(303);
    expect(chosen.headers.get("location")).toBe("/dashboard");
    const overview = await (await browser.get("/dashboard")).text();
    expect(overview).toContain("Beta");
    expect(overview).not.toContain("Alpha");
    // The choice is spent: the picker is gone.
    expect((await browser.get("/dashboard/choose-workspace")).headers.get("location")).toBe("/dashboard/sign-in");
  });

  it("a password that opens one of the memberships signs straight into that workspace", async () => {
    const [a, b] = await Promise.all([createWorkspace({ name: "Alpha" }), createWorkspace({ name: "Beta" })]);
    const person = await personIn([a]);
    // In B the same email redeemed its own link with another password.
    const { path } = await invite(b, person.email, "viewer");
    const set = await new Browser().post(path, {
      password: "another passphrase, for Beta",
      confirm: "another passphrase, for Beta",
    });
    expect(set.status).toBe(303);
    const browser = new Browser();
    const res = await signIn(browser, person.email, "another passphrase, for Beta");
    expect(res.headers.get("location")).toBe("/dashboard");
    expect(await (await browser.get("/dashboard")).text()).toContain("Beta");
  });
});

describe("the workspace choice after sign-in", () => {
  it("opens one session only: the same cookie, put back, is sent to sign in", async () => {
    const [a, b] = await Promise.all([createWorkspace({ name: "Alpha" }), createWorkspace({ name: "Beta" })]);
    const person = await personIn([a, b]);
    const browser = new Browser();
    expect((await signIn(browser, person.email)).headers.get("location")).toBe("/dashboard/choose-workspace");
    const choice = browser.cookies.get("__Host-workspace-choice")!;
    expect(choice).toBeDefined();
    const first = await browser.post("/dashboard/choose-workspace", { memberId: person.memberIds[0]! });
    expect(first.headers.get("location")).toBe("/dashboard");
    // Replayed from another browser (or after the first one signed out), within its 5 minutes.
    for (const memberId of person.memberIds) {
      const replay = new Browser();
      replay.cookies.set("__Host-workspace-choice", choice);
      const res = await replay.post("/dashboard/choose-workspace", { memberId });
      expect(res.headers.get("location")).toBe("/dashboard/sign-in");
      expect(replay.cookies.has("__Host-session")).toBe(false);
    }
    const sessions = await env.DB.prepare(`SELECT COUNT(*) AS n FROM dashboard_sessions WHERE member_id IN (?, ?)`)
      .bind(...person.memberIds)
      .first<{ n: number }>();
    // The one from the first choice, and the ones personIn opened.
    expect(sessions?.n).toBe(1 + person.memberIds.length);
  });

  it("a membership reset or given a new password since the sign-in is no longer offered, and cannot be chosen", async () => {
    const [a, b, c] = await Promise.all([
      createWorkspace({ name: "Alpha" }),
      createWorkspace({ name: "Beta" }),
      createWorkspace({ name: "Gamma" }),
    ]);
    const person = await personIn([a, b, c]);
    const [inA, inB, inC] = person.memberIds as [string, string, string];
    const ownerA = await signedInMember(a, "owner");
    const attacker = new Browser();
    expect((await signIn(attacker, person.email)).headers.get("location")).toBe("/dashboard/choose-workspace");
    // A's owner resets the member (a new link clears the password and ends its sessions).
    expect((await ownerA.browser.post("/dashboard/members", { email: person.email, role: "developer" })).status).toBe(
      303,
    );
    // In B the person changes their password.
    const inBBrowser = new Browser();
    expect((await signIn(inBBrowser, person.email)).headers.get("location")).toBe("/dashboard/choose-workspace");
    expect((await inBBrowser.post("/dashboard/choose-workspace", { memberId: inB })).status).toBe(303);
    const NEW = "a brand new passphrase for Beta";
    expect(
      (await inBBrowser.post("/dashboard/account/password", { current: PASSWORD, password: NEW, confirm: NEW })).status,
    ).toBe(303);

    const picker = await (await attacker.get("/dashboard/choose-workspace")).text();
    expect(picker).not.toContain("Alpha");
    expect(picker).not.toContain("Beta");
    expect(picker).toContain("Gamma");
    const choice = attacker.cookies.get("__Host-workspace-choice")!;
    for (const memberId of [inA, inB]) {
      attacker.cookies.set("__Host-workspace-choice", choice);
      const res = await attacker.post("/dashboard/choose-workspace", { memberId });
      expect(res.headers.get("location"), memberId).toBe("/dashboard/sign-in");
      expect(attacker.cookies.has("__Host-session")).toBe(false);
    }
    // What the sign-in proved and still holds opens.
    attacker.cookies.set("__Host-workspace-choice", choice);
    expect((await attacker.post("/dashboard/choose-workspace", { memberId: inC })).headers.get("location")).toBe(
      "/dashboard",
    );
    expect(await (await attacker.get("/dashboard")).text()).toContain("Gamma");
  });
});

describe("admin: removing a member", () => {
  it("removes the member and ends its sessions; the last owner stays; unknown and foreign ids are 404", async () => {
    const [a, b] = await Promise.all([createWorkspace(), createWorkspace()]);
    const [owner, dev] = await Promise.all([signedInMember(a, "owner"), signedInMember(a, "developer")]);
    const res = await admin(`/workspaces/${a}/members/${dev.memberId}`, { method: "DELETE" });
    expect(res.status).toBe(204);
    expect((await dev.browser.get("/dashboard")).headers.get("location")).toMatch(/^\/dashboard\/sign-in/);
    expect(await env.DB.prepare("SELECT id FROM members WHERE id = ?").bind(dev.memberId).first()).toBeNull();

    const last = await expectError(
      await admin(`/workspaces/${a}/members/${owner.memberId}`, { method: "DELETE" }),
      400,
      "invalid_request",
    );
    expect(last.error.details?.[0]?.rule).toBe("last_owner");
    expect((await owner.browser.get("/dashboard")).status).toBe(200);

    await expectError(
      await admin(`/workspaces/${b}/members/${owner.memberId}`, { method: "DELETE" }),
      404,
      "not_found",
    );
    await expectError(
      await admin(`/workspaces/${a}/members/${crypto.randomUUID()}`, { method: "DELETE" }),
      404,
      "not_found",
    );
    await expectError(await admin(`/workspaces/${a}/members/not-a-uuid`, { method: "DELETE" }), 404, "not_found");
  });
});
