import { auditClaimedAway } from "./claimed-away";
import { Hono } from "hono";
import { getConnectedNumber } from "../../db/channel-numbers";
import { findByUuid } from "../../lib/job-id";
import { connectNumber, type ConnectInput, type Refused } from "./connect-number";
import { disconnectNumber } from "./disconnect-number";
import { replaceNumberToken } from "./replace-token";
import type { OperatorProfile } from "../../operator/account";
import { auditMember } from "../audit/member-audit";
import { memberCaller, type DashboardEnv } from "../../dashboard/context";
import { setFlash } from "../../dashboard/flash";
import { formFields } from "../../dashboard/forms";
import { requireRole } from "../../dashboard/roles";
import type { FormState } from "./number-forms";
import { confirmPage, notFoundPage, rateLimitedPage } from "../../dashboard/pages/errors";
import { renderNumber, renderNumbers } from "./pages";

// The owners' changes to the workspace's numbers: the same domain operations
// (operator checks and limits included) as POST/PATCH/DELETE /api/v1/channel-numbers.

const DISPLAY_NUMBER = /^\+?\d{4,32}$/;
const OPERATOR_ID = /^\d{1,32}$/;
const TOKEN_CHARS = { min: 16, max: 4096 };

/** The form field an operator refusal is about ("upstream.wabaId" → "wabaId"). */
const formField = (r: Refused): string => r.field.replace(/^upstream\./, "");

/** "Acme Shop (+15557770000): quality GREEN, tier TIER_1K": what the operator said, for the notice after connecting. */
const describeProfile = (p: OperatorProfile): string =>
  `${p.verifiedName ?? "no verified name"} (${p.displayPhoneNumber}): quality ${p.qualityRating ?? "unknown"}, messaging limit tier ${p.messagingLimitTier ?? "unknown"}`;

/** The connect input of a submitted form, or the field it gets wrong. */
function connectInput(
  f: Record<string, string>,
): { ok: true; input: ConnectInput } | { ok: false; kind: "sandbox" | "cloud"; state: FormState } {
  const values = {
    displayPhoneNumber: (f.displayPhoneNumber ?? "").trim(),
    phoneNumberId: (f.phoneNumberId ?? "").trim(),
    wabaId: (f.wabaId ?? "").trim(),
  };
  if (f.type !== "cloud") {
    if (!DISPLAY_NUMBER.test(values.displayPhoneNumber)) {
      return {
        ok: false,
        kind: "sandbox",
        state: { values, field: "displayPhoneNumber", error: "Digits only (4 to 32), optionally with a leading +." },
      };
    }
    return { ok: true, input: { type: "sandbox", displayPhoneNumber: values.displayPhoneNumber } };
  }
  const token = (f.accessToken ?? "").trim();
  if (!OPERATOR_ID.test(values.phoneNumberId))
    return {
      ok: false,
      kind: "cloud",
      state: { values, field: "phoneNumberId", error: "The operator's numeric phone number id." },
    };
  if (!OPERATOR_ID.test(values.wabaId))
    return {
      ok: false,
      kind: "cloud",
      state: { values, field: "wabaId", error: "The operator's numeric business account id." },
    };
  if (token.length < TOKEN_CHARS.min || token.length > TOKEN_CHARS.max) {
    return {
      ok: false,
      kind: "cloud",
      state: {
        values,
        field: "accessToken",
        error: `An access token is ${TOKEN_CHARS.min} to ${TOKEN_CHARS.max} characters.`,
      },
    };
  }
  return {
    ok: true,
    input: { type: "cloud", phoneNumberId: values.phoneNumberId, wabaId: values.wabaId, accessToken: token },
  };
}

export const numberChangePages = new Hono<DashboardEnv>()
  .post("/numbers", requireRole("owner"), async (c) => {
    const parsed = connectInput(await formFields(c));
    if (!parsed.ok) {
      c.status(400);
      return renderNumbers(c, parsed.state, parsed.kind);
    }
    const session = c.get("session");
    const outcome = await connectNumber(c.env, memberCaller(session), parsed.input);
    if (!outcome.ok) {
      if (outcome.problem === "rate_limited") return rateLimitedPage(c, outcome, "/dashboard/numbers");
      const kind = parsed.input.type;
      const values: Record<string, string> =
        parsed.input.type === "cloud"
          ? { phoneNumberId: parsed.input.phoneNumberId, wabaId: parsed.input.wabaId }
          : { displayPhoneNumber: parsed.input.displayPhoneNumber };
      c.status(outcome.problem === "plan_limit" ? 403 : outcome.problem === "unavailable" ? 502 : 400);
      const state: FormState =
        outcome.problem === "refused"
          ? { values, field: formField(outcome), error: outcome.reason }
          : { values, error: outcome.reason };
      return renderNumbers(c, state, kind);
    }
    await auditMember(c, {
      action: outcome.claimedFrom ? "channel_number.claimed" : "channel_number.connected",
      target: { type: "channel_number", id: outcome.row.id },
      detail: `${outcome.row.upstream_type} ${outcome.row.display_phone_number}`,
    });
    if (outcome.claimedFrom) await auditClaimedAway(c.env.DB, outcome.claimedFrom, c.get("requestId"));
    const notice = outcome.profile
      ? `Connected ${outcome.row.display_phone_number}. The operator says: ${describeProfile(outcome.profile)}. Its webhooks now reach us.`
      : `Sandbox number ${outcome.row.display_phone_number} connected.`;
    await setFlash(c, { notice }, session.token_hash);
    return c.redirect(`/dashboard/numbers/${outcome.row.id}`, 303);
  })
  .post("/numbers/:id/token", requireRole("owner"), async (c) => {
    const session = c.get("session");
    const number = await findByUuid(c.req.param("id"), (stored) =>
      getConnectedNumber(c.env.DB, session.workspace_id, stored),
    );
    if (!number) return notFoundPage(c);
    const token = ((await formFields(c)).accessToken ?? "").trim();
    if (token.length < TOKEN_CHARS.min || token.length > TOKEN_CHARS.max) {
      c.status(400);
      return renderNumber(c, number, {
        field: "accessToken",
        error: `An access token is ${TOKEN_CHARS.min} to ${TOKEN_CHARS.max} characters.`,
      });
    }
    const outcome = await replaceNumberToken(c.env, memberCaller(session), number.id, token);
    if (!outcome.ok) {
      if (outcome.problem === "rate_limited") return rateLimitedPage(c, outcome, `/dashboard/numbers/${number.id}`);
      if (outcome.problem === "not_found") return notFoundPage(c);
      c.status(outcome.problem === "unavailable" ? 502 : 400);
      const error = outcome.problem === "sandbox" ? "A sandbox number has no token." : outcome.reason;
      return renderNumber(c, number, { field: "accessToken", error });
    }
    await auditMember(c, {
      action: "channel_number.credentials_replaced",
      target: { type: "channel_number", id: number.id },
      detail: number.display_phone_number,
    });
    await setFlash(
      c,
      { notice: `Token replaced; the operator says: ${describeProfile(outcome.profile)}.` },
      session.token_hash,
    );
    return c.redirect(`/dashboard/numbers/${number.id}`, 303);
  })
  .post("/numbers/:id/disconnect", requireRole("owner"), async (c) => {
    const session = c.get("session");
    const number = await findByUuid(c.req.param("id"), (stored) =>
      getConnectedNumber(c.env.DB, session.workspace_id, stored),
    );
    if (!number) return notFoundPage(c);
    if ((await formFields(c)).confirmed !== "yes") {
      return confirmPage(c, {
        title: "Disconnect number",
        question: `Disconnect ${number.display_phone_number}? New sends are refused at once; messages still waiting to leave end failed with number_disconnected.`,
        action: `/dashboard/numbers/${number.id}/disconnect`,
        label: "Disconnect number",
        back: `/dashboard/numbers/${number.id}`,
      });
    }
    const outcome = await disconnectNumber(c.env, memberCaller(session), number.id);
    if (!outcome.ok)
      return outcome.problem === "rate_limited"
        ? rateLimitedPage(c, outcome, `/dashboard/numbers/${number.id}`)
        : notFoundPage(c);
    await auditMember(c, {
      action: "channel_number.disconnected",
      target: { type: "channel_number", id: number.id },
      detail: number.display_phone_number,
    });
    await setFlash(
      c,
      {
        notice: `${number.display_phone_number} disconnected; messages that were still waiting fail with number_disconnected.`,
      },
      session.token_hash,
    );
    return c.redirect("/dashboard/numbers", 303);
  });
