import { createRoute, z } from "@hono/zod-openapi";
import {
  bearerSecurity,
  errorResponses,
  jsonContent,
  jsonRequestBody,
  newRouter,
  requestIdHeader,
} from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { E164_DIGITS } from "../../messages/recipient";
import { getConnectedNumber, type ChannelNumberRow } from "../../db/channel-numbers";
import {
  addSandboxTestContact,
  MAX_TEST_CONTACTS_PER_NUMBER,
  NOT_SANDBOX,
  PHONE_RULE,
  removeSandboxTestContact,
  testContactsOf,
} from "./test-contacts";
import { ApiError, foundOr404 } from "../../lib/errors";
import { jsonBody } from "../../middleware/json-body";
import { limitHeaders, throwIfLimited } from "../../middleware/rate-limit";
import { auditApi } from "../audit/api-audit";
import type { AppEnv } from "../../context";
import type { Context } from "hono";

// Test contacts: recipients a sandbox number sends to outside the 24-hour window, as the operator's
// test numbers allow. Everyone else needs to have written in the last 24 hours, as on a live number.

const Phone = z
  .string()
  .regex(E164_DIGITS, { error: `phone must be ${PHONE_RULE}` })
  .openapi({ description: "The contact, E.164 digits without '+'.", example: EXAMPLE.contact });
const NumberId = z
  .string()
  .uuid()
  .openapi({ description: "A sandbox number of this workspace.", example: EXAMPLE.channelNumberId });

const TestContact = z.object({ phone: z.string(), createdAt: z.string() }).openapi("SandboxTestContact");
const TestContactList = z
  .object({
    data: z.array(TestContact),
    limit: z.number().int().openapi({ description: "Test contacts a number may have." }),
  })
  .openapi("SandboxTestContactList");
const AddTestContact = z.strictObject({ channelNumberId: NumberId, phone: Phone }).openapi("SandboxTestContactRequest");

const EXAMPLE_CONTACT = { phone: EXAMPLE.contact, createdAt: "2026-11-21T14:03:11.000Z" };

const list = createRoute({
  method: "get",
  path: "/sandbox/test-contacts",
  "x-key-role": "viewer",
  operationId: "listSandboxTestContacts",
  tags: ["Sandbox"],
  summary: "Sandbox only: a sandbox number's test contacts",
  description: `Recipients the sandbox number sends free-form text to outside the 24-hour window (at most ${MAX_TEST_CONTACTS_PER_NUMBER}).`,
  security: bearerSecurity,
  request: { query: z.object({ channelNumberId: NumberId }) },
  responses: {
    200: jsonContent(TestContactList, "The number's test contacts, oldest first.", {
      data: [EXAMPLE_CONTACT],
      limit: MAX_TEST_CONTACTS_PER_NUMBER,
    }),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const add = createRoute({
  method: "post",
  path: "/sandbox/test-contacts",
  "x-key-role": "developer",
  operationId: "addSandboxTestContact",
  tags: ["Sandbox"],
  summary: "Sandbox only: mark a recipient as a test contact",
  description:
    "A sandbox number enforces the operator's 24-hour customer-service window: a recipient who has not written in 24 hours gets " +
    "`failed` with `service_window_closed`, except its test contacts. 201 when added, 200 when it already was one; " +
    `at most ${MAX_TEST_CONTACTS_PER_NUMBER} per number. Refused (403) for numbers that are not sandbox numbers.`,
  security: bearerSecurity,
  middleware: [jsonBody] as const,
  request: {
    body: jsonRequestBody(AddTestContact, { channelNumberId: EXAMPLE.channelNumberId, phone: EXAMPLE.contact }),
  },
  responses: {
    201: jsonContent(TestContact, "Added.", EXAMPLE_CONTACT),
    200: jsonContent(TestContact, "It already was a test contact; nothing changed.", EXAMPLE_CONTACT),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/sandbox/test-contacts/{channelNumberId}/{phone}",
  "x-key-role": "developer",
  operationId: "removeSandboxTestContact",
  tags: ["Sandbox"],
  summary: "Sandbox only: unmark a test contact",
  security: bearerSecurity,
  request: { params: z.object({ channelNumberId: NumberId, phone: Phone }) },
  responses: { 204: { description: "Removed.", headers: requestIdHeader }, ...errorResponses(400, 401, 403, 404, 429) },
});

/** The caller's sandbox number: 404 like an unknown one when not theirs, 403 when it is live. */
async function sandboxNumber(c: Context<AppEnv>, id: string): Promise<ChannelNumberRow> {
  const number = foundOr404(await getConnectedNumber(c.env.DB, c.get("principal").workspaceId, id), "Channel number");
  if (number.upstream_type !== "sandbox") throw new ApiError("forbidden", NOT_SANDBOX);
  return number;
}

// The same operations as the dashboard's number page (src/features/sandbox/test-contacts.ts). The
// phone was validated by the schema above; the domain checks it again, as it does for the dashboard.
export const sandboxTestContactRoutes = newRouter()
  .openapi(list, async (c) => {
    const number = await sandboxNumber(c, c.req.valid("query").channelNumberId);
    const rows = await testContactsOf(c.env.DB, number);
    return c.json(
      { data: rows.map((r) => ({ phone: r.phone, createdAt: r.created_at })), limit: MAX_TEST_CONTACTS_PER_NUMBER },
      200,
    );
  })
  .openapi(add, async (c) => {
    const body = c.req.valid("json");
    const number = await sandboxNumber(c, body.channelNumberId);
    const outcome = await addSandboxTestContact(c.env, number, body.phone);
    throwIfLimited(outcome);
    if (!outcome.ok) {
      if (outcome.problem === "not_sandbox") throw new ApiError("forbidden", outcome.reason);
      const rule = outcome.problem === "full" ? "max_test_contacts" : "pattern";
      const message =
        outcome.problem === "full" ? `At most ${MAX_TEST_CONTACTS_PER_NUMBER} per number.` : outcome.reason;
      throw new ApiError("invalid_request", outcome.reason, { details: [{ path: "phone", rule, message }] });
    }
    limitHeaders(c, outcome.limit);
    // The phone is personal data: the entry names the number, not the contact.
    if (outcome.added)
      await auditApi(c, { action: "sandbox.test_contact_added", target: { type: "channel_number", id: number.id } });
    const contact = { phone: outcome.contact.phone, createdAt: outcome.contact.created_at };
    return outcome.added ? c.json(contact, 201) : c.json(contact, 200);
  })
  .openapi(remove, async (c) => {
    const { channelNumberId, phone } = c.req.valid("param");
    const number = await sandboxNumber(c, channelNumberId);
    const outcome = await removeSandboxTestContact(c.env, number, phone);
    throwIfLimited(outcome);
    if (!outcome.ok) {
      if (outcome.problem === "not_sandbox") throw new ApiError("forbidden", outcome.reason);
      if (outcome.problem === "invalid_phone")
        throw new ApiError("invalid_request", outcome.reason, {
          details: [{ path: "phone", rule: "pattern", message: outcome.reason }],
        });
      throw new ApiError("not_found", outcome.reason);
    }
    limitHeaders(c, outcome.limit);
    await auditApi(c, { action: "sandbox.test_contact_removed", target: { type: "channel_number", id: number.id } });
    return c.body(null, 204);
  });
