import { Hono } from "hono";
import type { Context } from "hono";
import { getConnectedNumber } from "../../db/channel-numbers";
import { findByUuid } from "../../lib/job-id";
import { auditMember } from "../audit/member-audit";
import type { DashboardEnv } from "../../dashboard/context";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { requireRole } from "../../dashboard/roles";
import { notFoundPage } from "../../dashboard/pages/errors";
import { renderNumber } from "../numbers/pages";
import { sendTestMessage, TEST_MESSAGE_FORMS, type TestMessageForm } from "./sandbox-test-send";

// Developers and owners send a test media or reply-buttons message from a sandbox number's page.
// A live number has no such form: its messages reach real people, through the API only.

/** The session's connected number of the `:id` in the path, or null (404 like an unknown one). */
const numberOfPath = (c: Context<DashboardEnv>) =>
  findByUuid(c.req.param("id") ?? "", (stored) => getConnectedNumber(c.env.DB, c.get("session").workspace_id, stored));

const isForm = (v: string | undefined): v is TestMessageForm =>
  (TEST_MESSAGE_FORMS as readonly string[]).includes(v ?? "");

export const testMessagePages = new Hono<DashboardEnv>().post(
  "/numbers/:id/test-messages",
  requireRole("developer"),
  async (c) => {
    const session = c.get("session");
    const number = await numberOfPath(c);
    if (!number) return notFoundPage(c);
    const back = `/dashboard/numbers/${number.id}`;
    const fields = await formFields(c);
    if (number.upstream_type !== "sandbox" || !isForm(fields.form)) {
      // Only a crafted post gets here: the reason as an error notice.
      const notice =
        number.upstream_type !== "sandbox"
          ? "Test messages are sent from sandbox numbers only: a live number's messages reach real people."
          : "This form is not one of the page's test forms.";
      await setFlash(c, { notice, error: true }, session.token_hash);
      return c.redirect(back, 303);
    }
    const result = await sendTestMessage(c.env, {
      workspaceId: session.workspace_id,
      channelNumberId: number.id,
      form: fields.form,
      fields,
    });
    if (!result.ok) {
      c.status(result.status);
      // What was typed comes back in the fields; the hidden ones are the form's own.
      const values = Object.fromEntries(Object.entries(fields).filter(([k]) => k !== "idempotencyKey" && k !== "form"));
      return renderNumber(c, number, {}, {}, { form: fields.form, ...result, values });
    }
    // Audited like the template test: which kind, never the recipient or the content.
    if (!result.duplicate)
      await auditMember(c, {
        action: "sandbox.test_message_sent",
        target: { type: "channel_number", id: number.id },
        detail: result.type,
      });
    const notice = result.duplicate
      ? "This test was already sent; nothing was sent again."
      : `Test ${result.type} message queued. Its status follows below.`;
    await setFlash(c, { notice }, session.token_hash);
    return c.redirect(`/dashboard/messages/${result.jobId}`, 303);
  },
);
