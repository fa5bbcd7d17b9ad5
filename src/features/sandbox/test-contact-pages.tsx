import { Hono } from "hono";
import type { Context } from "hono";
import { getConnectedNumber } from "../../db/channel-numbers";
import { findByUuid } from "../../lib/job-id";
import { addSandboxTestContact, removeSandboxTestContact } from "./test-contacts";
import { auditMember } from "../audit/member-audit";
import type { DashboardEnv } from "../../dashboard/context";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { requireRole } from "../../dashboard/roles";
import { notFoundPage, rateLimitedPage } from "../../dashboard/pages/errors";
import { renderNumber } from "../numbers/pages";

// Developers and owners mark a sandbox number's test contacts on its page: the same domain
// operations (validation and the bound of 10 included) as /api/v1/sandbox/test-contacts.

/** The session's connected number of the `:id` in the path, or null (404 like an unknown one). */
const numberOfPath = (c: Context<DashboardEnv>) =>
  findByUuid(c.req.param("id") ?? "", (stored) => getConnectedNumber(c.env.DB, c.get("session").workspace_id, stored));

export const testContactPages = new Hono<DashboardEnv>()
  .post("/numbers/:id/test-contacts", requireRole("developer"), async (c) => {
    const session = c.get("session");
    const number = await numberOfPath(c);
    if (!number) return notFoundPage(c);
    const phone = ((await formFields(c)).phone ?? "").trim();
    const outcome = await addSandboxTestContact(c.env, number, phone);
    if (!outcome.ok) {
      if (outcome.problem === "rate_limited") return rateLimitedPage(c, outcome, `/dashboard/numbers/${number.id}`);
      // A live number's page has no such form: a crafted post gets the reason as an error notice.
      if (outcome.problem === "not_sandbox") {
        await setFlash(c, { notice: outcome.reason, error: true }, session.token_hash);
        return c.redirect(`/dashboard/numbers/${number.id}`, 303);
      }
      c.status(400);
      return renderNumber(c, number, {}, { values: { phone }, field: "phone", error: outcome.reason });
    }
    // The phone is personal data: the entry names the number, not the contact (as the API's does).
    if (outcome.added) {
      await auditMember(c, {
        action: "sandbox.test_contact_added",
        target: { type: "channel_number", id: number.id },
        detail: number.display_phone_number,
      });
    }
    const notice = outcome.added
      ? `${phone} is now a test contact of ${number.display_phone_number}.`
      : `${phone} already was a test contact; nothing changed.`;
    await setFlash(c, { notice }, session.token_hash);
    return c.redirect(`/dashboard/numbers/${number.id}`, 303);
  })
  .post("/numbers/:id/test-contacts/:phone/remove", requireRole("developer"), async (c) => {
    const session = c.get("session");
    const number = await numberOfPath(c);
    if (!number) return notFoundPage(c);
    const phone = c.req.param("phone");
    const outcome = await removeSandboxTestContact(c.env, number, phone);
    if (!outcome.ok) {
      if (outcome.problem === "rate_limited") return rateLimitedPage(c, outcome, `/dashboard/numbers/${number.id}`);
      await setFlash(c, { notice: outcome.reason, error: true }, session.token_hash);
      return c.redirect(`/dashboard/numbers/${number.id}`, 303);
    }
    await auditMember(c, {
      action: "sandbox.test_contact_removed",
      target: { type: "channel_number", id: number.id },
      detail: number.display_phone_number,
    });
    await setFlash(
      c,
      { notice: `${phone} is no longer a test contact of ${number.display_phone_number}.` },
      session.token_hash,
    );
    return c.redirect(`/dashboard/numbers/${number.id}`, 303);
  });
