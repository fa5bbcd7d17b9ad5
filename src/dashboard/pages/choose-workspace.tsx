import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { membersWithWorkspace } from "../../db/members";
import { MAX_SIGN_IN_MEMBERSHIPS, openChosenSession } from "../../domain/sign-in";
import { now } from "../../lib/clock";
import type { DashboardEnv } from "../context";
import { formFields } from "../forms";
import { deleteSealedCookie, readSealedCookie, setSealedCookie } from "../sealed-cookie";
import { safeNext } from "../session";
import { startSession } from "./sign-in";
import { asActor, auditMember } from "../audit";

// After a sign-in whose password matched memberships of several workspaces, the
// person picks one. What the sign-in proved (which memberships, until when)
// travels in a sealed cookie, so the picker needs no table and no password again.
const COOKIE = "workspace-choice";
const PURPOSE = "dashboard-workspace-choice-v1";
const CHOICE_TTL_SECONDS = 300;

const Choice = z.object({
  memberIds: z.array(z.string()).min(1).max(MAX_SIGN_IN_MEMBERSHIPS),
  next: z.string(),
  expiresAt: z.number(),
});
type Choice = z.infer<typeof Choice>;

/** Remembers the memberships a sign-in proved and sends the browser to the picker. */
export async function askForWorkspace(c: Context<DashboardEnv>, memberIds: string[], next: string): Promise<Response> {
  await setSealedCookie(
    c,
    COOKIE,
    PURPOSE,
    { memberIds, next, expiresAt: now() + CHOICE_TTL_SECONDS * 1000 } satisfies Choice,
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
    const memberships = await membersWithWorkspace(c.env.DB, choice.memberIds);
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
    // Only a membership this browser's sign-in proved, and only once.
    if (!choice || !choice.memberIds.includes(memberId)) return backToSignIn(c);
    deleteSealedCookie(c, COOKIE);
    const [member] = await membersWithWorkspace(c.env.DB, [memberId]);
    // Removed in the meantime.
    if (!member) return backToSignIn(c);
    await startSession(c, await openChosenSession(c.env.DB, member.id), `Signed in to ${member.workspace_name}.`);
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
