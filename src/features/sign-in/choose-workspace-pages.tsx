import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { MAX_SIGN_IN_MEMBERSHIPS, type ProvedMembership } from "./sign-in";
import { openChosenSession, stillProved } from "./choose-workspace";
import { now } from "../../lib/clock";
import type { DashboardEnv } from "../../dashboard/context";
import { formFields } from "../../dashboard/forms";
import { deleteSealedCookie, readSealedCookie, setSealedCookie } from "../../dashboard/sealed-cookie";
import { safeNext, startSession } from "../../dashboard/session";
import { asActor, auditMember } from "../audit/member-audit";

// After a sign-in whose password matched memberships of several workspaces, the
// person picks one. What the sign-in proved (which memberships with which password,
// until when) travels in a sealed cookie, so the picker needs no table and no password
// again; its nonce makes it good for one session only, and a membership whose password
// was reset or changed since is no longer offered.
const COOKIE = "workspace-choice";
const PURPOSE = "dashboard-workspace-choice-v2";
const CHOICE_TTL_SECONDS = 300;

const Choice = z.object({
  choices: z
    .array(z.object({ memberId: z.string(), proof: z.string() }))
    .min(1)
    .max(MAX_SIGN_IN_MEMBERSHIPS),
  nonce: z.string().min(16),
  next: z.string(),
  expiresAt: z.number(),
});
type Choice = z.infer<typeof Choice>;

/** Remembers the memberships a sign-in proved and sends the browser to the picker. */
export async function askForWorkspace(
  c: Context<DashboardEnv>,
  proved: { choices: ProvedMembership[]; nonce: string },
  next: string,
): Promise<Response> {
  await setSealedCookie(
    c,
    COOKIE,
    PURPOSE,
    {
      choices: proved.choices,
      nonce: proved.nonce,
      next,
      expiresAt: now() + CHOICE_TTL_SECONDS * 1000,
    } satisfies Choice,
    CHOICE_TTL_SECONDS,
  );
  return c.redirect("/dashboard/choose-workspace", 303);
}

async function pendingChoice(c: Context<DashboardEnv>): Promise<Choice | null> {
  const parsed = Choice.safeParse(await readSealedCookie(c, COOKIE, PURPOSE));
  return parsed.success && parsed.data.expiresAt > now() ? parsed.data : null;
}

const backToSignIn = (c: Context<DashboardEnv>) => c.redirect("/dashboard/sign-in", 303);

export const chooseWorkspacePages = new Hono<DashboardEnv>()
  .get("/choose-workspace", async (c) => {
    const choice = await pendingChoice(c);
    if (!choice) return backToSignIn(c);
    const memberships = await stillProved(c.env.DB, choice.choices);
    if (memberships.length === 0) return backToSignIn(c);
    return c.render(
      <>
        <h1>Choose a workspace</h1>
        <p>Your email and password open several workspaces. Which one now? (To switch later, sign out and in again.)</p>
        <ul class="stack">
          {memberships.map((m) => (
            <li>
              <form method="post" action="/dashboard/choose-workspace" class="inline">
                <input type="hidden" name="memberId" value={m.id} />
                <button type="submit">{m.workspace_name}</button> as {m.role}
              </form>
            </li>
          ))}
        </ul>
      </>,
      { title: "Choose a workspace" },
    );
  })
  .post("/choose-workspace", async (c) => {
    const choice = await pendingChoice(c);
    const memberId = (await formFields(c)).memberId ?? "";
    const chosen = choice?.choices.find((x) => x.memberId === memberId);
    // Only a membership this browser's sign-in proved.
    if (!choice || !chosen) return backToSignIn(c);
    deleteSealedCookie(c, COOKIE);
    // Removed, reset or given a new password in the meantime, or this choice already opened a session.
    const opened = await openChosenSession(c.env.DB, c.env, {
      nonce: choice.nonce,
      chosen,
      lifetimeSeconds: CHOICE_TTL_SECONDS,
    });
    if (!opened) return backToSignIn(c);
    const { token, member } = opened;
    await startSession(c, token, `Signed in to ${member.workspace_name}.`);
    await auditMember(
      c,
      {
        action: "member.signed_in",
        target: { type: "member", id: member.id },
        detail: "workspace chosen after sign-in",
      },
      asActor(member),
    );
    return c.redirect(safeNext(choice.next), 303);
  });
