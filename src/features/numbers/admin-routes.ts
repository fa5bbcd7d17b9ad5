import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import {
  countConnected,
  disconnectNumber,
  findConnectedByOperatorId,
  insertChannelNumberWithinPlan,
  getNumberById,
  listAllNumbers,
  replaceCredentials,
  replaceCredentialsAndProfile,
  storedProfileOf,
  type ChannelNumberRow,
  type StoredProfile,
} from "../../db/channel-numbers";
import { ApiError, foundOr404, notFound } from "../../lib/errors";
import { requireWorkspace } from "../../routes/admin/require-workspace";
import { isoNow } from "../../lib/clock";
import { sealOperatorCredentials } from "../../lib/sealed-secrets";
import { findByUuid } from "../../lib/job-id";
import { numberChanged, workspaceChanged } from "../../engine/numbers";
import { jsonBody } from "../../middleware/json-body";
import { auditAdmin } from "../audit/api-audit";
import { verifyLiveNumber } from "./verify-live-number";
import { syncOnConnect } from "../templates/sync";
import { verifyAndSubscribe } from "../../operator/account";
import { operatorError } from "../../routes/operator-refusal";

const AccessToken = z.string().min(16).max(4096).openapi({ description: "Stored encrypted; never returned." });
const WabaId = z
  .string()
  .regex(/^\d{1,32}$/, { error: "wabaId is the operator's numeric business account id." })
  .optional()
  .openapi({
    description:
      "The business account the number belongs to. With it, the operator must also confirm the number is in that account " +
      "and subscribe the app to its webhooks, as the public API's connect does; the number can then send templates (API v2).",
  });

// The body field `upstream` is the admin API's contract; inside the code it is the number's operator connection.
const OperatorConnection = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("sandbox") }),
  z.strictObject({
    type: z.literal("cloud"),
    phoneNumberId: z
      .string()
      .regex(/^\d{1,32}$/, { error: "phoneNumberId is the operator's numeric phone number id." }),
    wabaId: WabaId,
    accessToken: AccessToken,
  }),
]);

const ConnectNumber = z.strictObject({
  displayPhoneNumber: z
    .string()
    .regex(/^\+?\d{4,32}$/, { error: "displayPhoneNumber must be digits, optionally with a leading '+'." }),
  upstream: OperatorConnection,
});

const AdminNumber = z
  .object({
    id: z.string().uuid(),
    workspaceId: z.string().uuid(),
    displayPhoneNumber: z.string(),
    upstream: z.object({
      type: z.enum(["sandbox", "cloud"]),
      phoneNumberId: z.string().nullable(),
      wabaId: z.string().nullable(),
    }),
    status: z.enum(["connected", "disconnected"]),
    createdAt: z.string().datetime(),
    disconnectedAt: z.string().datetime().nullable(),
  })
  .openapi("AdminChannelNumber");

const toView = (row: ChannelNumberRow): z.infer<typeof AdminNumber> => ({
  id: row.id,
  workspaceId: row.workspace_id,
  displayPhoneNumber: row.display_phone_number,
  upstream: { type: row.upstream_type, phoneNumberId: row.upstream_phone_number_id, wabaId: row.waba_id },
  status: row.status,
  createdAt: row.created_at,
  disconnectedAt: row.disconnected_at,
});

/**
 * The public API's checks of a live number with its business account (its record, its membership
 * of the account, the webhook subscription), as the columns they fill; a refusal is thrown as the
 * uniform 400 naming the field, nothing stored.
 */
async function verifiedAccount(
  env: Env,
  n: { phoneNumberId: string; wabaId: string; accessToken: string },
  fieldsAt: "upstream" | "top" = "upstream",
): Promise<StoredProfile & { operator_checked_at: string }> {
  const verified = await verifyAndSubscribe(env, n);
  // The credentials body names its fields without the connect body's `upstream.`.
  if (!verified.ok)
    throw operatorError(verified, (field) => (fieldsAt === "top" ? field.replace(/^upstream\./, "") : field));
  return { ...storedProfileOf(verified.value), operator_checked_at: isoNow() };
}

const WorkspaceParam = z.object({ workspaceId: z.string() });

const connect = createRoute({
  method: "post",
  path: "/workspaces/{workspaceId}/channel-numbers",
  middleware: [jsonBody] as const,
  request: {
    params: WorkspaceParam,
    body: { required: true, content: { "application/json": { schema: ConnectNumber } } },
  },
  responses: { 201: jsonContent(AdminNumber, "Connected."), ...errorResponses(400, 401, 403, 404) },
});

const list = createRoute({
  method: "get",
  path: "/workspaces/{workspaceId}/channel-numbers",
  request: { params: WorkspaceParam },
  responses: {
    200: jsonContent(z.object({ data: z.array(AdminNumber) }), "All numbers, disconnected ones included."),
    ...errorResponses(401, 404),
  },
});

const disconnect = createRoute({
  method: "delete",
  path: "/channel-numbers/{numberId}",
  request: { params: z.object({ numberId: z.string() }) },
  responses: { 204: { description: "Disconnected (also when it already was)." }, ...errorResponses(401, 404) },
});

const Credentials = z.strictObject({
  accessToken: AccessToken,
  wabaId: WabaId,
});

const reconnect = createRoute({
  method: "put",
  path: "/channel-numbers/{numberId}/credentials",
  description:
    "Replaces a live number's access token after the operator's check that it controls the number's phone number id " +
    "(and, for a number with a business account, or with `wabaId` given, that the number is in the account, whose webhooks it subscribes to). " +
    "`wabaId` gives a number connected without one its account, so that it can send templates. A number paused by an account-level refusal (e.g. an expired token) sends again at once.",
  middleware: [jsonBody] as const,
  request: {
    params: z.object({ numberId: z.string() }),
    body: { required: true, content: { "application/json": { schema: Credentials } } },
  },
  responses: { 200: jsonContent(AdminNumber, "Reconnected."), ...errorResponses(400, 401, 404) },
});

export const adminChannelNumberRoutes = newRouter()
  .openapi(connect, async (c) => {
    const { workspaceId } = c.req.valid("param");
    const body = c.req.valid("json");
    const workspace = await requireWorkspace(c.env.DB, workspaceId);
    const planLimit = () =>
      new ApiError(
        "forbidden",
        `The ${workspace.plan_id} plan allows at most ${workspace.max_numbers} connected number(s).`,
      );
    const alreadyConnected = () =>
      new ApiError(
        "invalid_request",
        "This operator phone number is already connected (to this or another workspace).",
        {
          details: [
            {
              path: "upstream.phoneNumberId",
              rule: "unique",
              message: "A phone number id can be connected once; disconnect it first.",
            },
          ],
        },
      );
    const id = crypto.randomUUID();
    let operatorId: string | null = null;
    let credentials: string | null = null;
    let account: Pick<ChannelNumberRow, "waba_id" | keyof StoredProfile | "operator_checked_at"> = {
      waba_id: null,
      verified_name: null,
      quality_rating: null,
      messaging_limit_tier: null,
      operator_checked_at: null,
    };
    if (body.upstream.type === "cloud") {
      const { phoneNumberId, wabaId, accessToken } = body.upstream;
      // Fast refusals before the operator is called; the insert below is the guarantee of both rules.
      if ((await countConnected(c.env.DB, workspaceId)) >= workspace.max_numbers) throw planLimit();
      if (await findConnectedByOperatorId(c.env.DB, phoneNumberId)) throw alreadyConnected();
      if (wabaId)
        account = { ...(await verifiedAccount(c.env, { phoneNumberId, wabaId, accessToken })), waba_id: wabaId };
      else await verifyLiveNumber(c.env, phoneNumberId, accessToken);
      operatorId = phoneNumberId;
      credentials = await sealOperatorCredentials(c.env, id, { accessToken });
    }
    const row: ChannelNumberRow = {
      id,
      workspace_id: workspaceId,
      display_phone_number: body.displayPhoneNumber,
      upstream_type: body.upstream.type,
      upstream_phone_number_id: operatorId,
      upstream_credentials: credentials,
      status: "connected",
      created_at: isoNow(),
      disconnected_at: null,
      ...account,
      last_operator_error: null,
      last_operator_notice: null,
      unverified_since: null,
    };
    const outcome = await insertChannelNumberWithinPlan(c.env.DB, row);
    if (outcome === "plan_limit") throw planLimit();
    if (outcome === "upstream_taken") throw alreadyConnected();
    await workspaceChanged(c.env, workspaceId);
    if (row.waba_id) await syncOnConnect(c.env, row.waba_id);
    await auditAdmin(c, workspaceId, {
      action: "channel_number.connected",
      target: { type: "channel_number", id: row.id },
      detail: `${row.upstream_type} ${row.display_phone_number}`,
    });
    return c.json(toView(row), 201);
  })
  .openapi(list, async (c) => {
    const { workspaceId } = c.req.valid("param");
    await requireWorkspace(c.env.DB, workspaceId);
    return c.json({ data: (await listAllNumbers(c.env.DB, workspaceId)).map(toView) }, 200);
  })
  .openapi(disconnect, async (c) => {
    const { numberId } = c.req.valid("param");
    const row = foundOr404(
      await findByUuid(numberId, (id) => disconnectNumber(c.env.DB, id, isoNow()), { asGiven: true }),
      "Channel number",
    );
    await workspaceChanged(c.env, row.workspace_id);
    // Messages still queued on it fail with number_disconnected instead of leaving.
    await numberChanged(c.env, row.id);
    await auditAdmin(c, row.workspace_id, {
      action: "channel_number.disconnected",
      target: { type: "channel_number", id: row.id },
      detail: row.display_phone_number,
    });
    return c.body(null, 204);
  })
  .openapi(reconnect, async (c) => {
    const { numberId } = c.req.valid("param");
    const { accessToken, wabaId: givenWabaId } = c.req.valid("json");
    const row = await findByUuid(numberId, (id) => getNumberById(c.env.DB, id), { asGiven: true });
    if (!row || row.status !== "connected") throw notFound("Channel number");
    if (row.upstream_type !== "cloud" || !row.upstream_phone_number_id) {
      throw new ApiError("invalid_request", "Only live (cloud) numbers have credentials; sandbox numbers need none.", {
        details: [{ path: "path.numberId", rule: "cloud_number", message: "This is a sandbox number." }],
      });
    }
    const wabaId = givenWabaId ?? row.waba_id;
    const sealed = await sealOperatorCredentials(c.env, row.id, { accessToken });
    let replaced: ChannelNumberRow | null;
    if (wabaId) {
      const { operator_checked_at: at, ...profile } = await verifiedAccount(
        c.env,
        { phoneNumberId: row.upstream_phone_number_id, wabaId, accessToken },
        "top",
      );
      replaced = await replaceCredentialsAndProfile(c.env.DB, row.id, sealed, profile, at, wabaId);
    } else {
      await verifyLiveNumber(c.env, row.upstream_phone_number_id, accessToken);
      replaced = await replaceCredentials(c.env.DB, row.id, sealed);
    }
    // Disconnected between the read and the write: 404 too.
    const updated = foundOr404(replaced, "Channel number");
    await numberChanged(c.env, row.id);
    // Its account's templates at once, as at connect. No object holds a number's account id: nothing to invalidate.
    if (givenWabaId && givenWabaId !== row.waba_id) await syncOnConnect(c.env, givenWabaId);
    await auditAdmin(c, row.workspace_id, {
      action: "channel_number.credentials_replaced",
      target: { type: "channel_number", id: row.id },
      detail: row.display_phone_number,
    });
    return c.json(toView(updated), 200);
  });
