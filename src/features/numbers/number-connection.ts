import {
  claimUnverifiedNumber,
  tokenRefused,
  countConnected,
  disconnectOwnNumber,
  findConnectedByUpstreamId,
  getConnectedNumber,
  insertChannelNumberWithinPlan,
  replaceCredentialsAndProfile,
  storedProfileOf,
  type ChannelNumberRow,
} from "../../db/channel-numbers";
import { getWorkspaceWithLimits } from "../../db/workspaces";
import { numberChanged, workspaceChanged } from "../../engine/numbers";
import { isoNow } from "../../lib/clock";
import { sealUpstreamCredentials } from "../../lib/sealed-secrets";
import type { ThrottleDecision } from "../../lib/throttle";
import {
  fetchNumberProfile,
  verifyAndSubscribe,
  type OperatorField,
  type OperatorProfile,
} from "../../upstream/operator-account";
import type { Caller } from "../../domain/actor";
import { findByUuid } from "../../domain/job-id";
import { spendWorkspaceHourly, type RateLimited, type Spent } from "../../domain/limit-check";
import { syncOnConnect } from "../templates/sync";
import { openUpstreamCredentials } from "../../lib/sealed-secrets";

// Connecting, re-keying and disconnecting a workspace's own numbers: what the
// public API and the dashboard share. Each caller turns the outcomes into its
// own answer (an error envelope, or a message beside a form field); nothing is
// stored unless the operator confirmed everything first.

export type ConnectInput =
  | { type: "sandbox"; displayPhoneNumber: string }
  | { type: "cloud"; phoneNumberId: string; wabaId: string; accessToken: string };

/** A refusal of the request: `field` is the request field it is about. */
export type Refused = {
  ok: false;
  problem: "refused";
  field: OperatorField | "upstream.phoneNumberId";
  reason: string;
};
type Unavailable = { ok: false; problem: "unavailable"; reason: string };

export type ConnectOutcome =
  | {
      ok: true;
      row: ChannelNumberRow;
      profile: OperatorProfile | null;
      limit: ThrottleDecision;
      /** The other connection of the number this one replaced (its token refused by the operator). */
      claimedFrom: ChannelNumberRow | null;
    }
  | Refused
  | Unavailable
  | { ok: false; problem: "plan_limit"; reason: string }
  | RateLimited;

export type ReplaceOutcome =
  | { ok: true; row: ChannelNumberRow; profile: OperatorProfile; limit: ThrottleDecision }
  | Refused
  | Unavailable
  | { ok: false; problem: "not_found" }
  | { ok: false; problem: "sandbox" }
  | RateLimited;

export type DisconnectOutcome =
  { ok: true; row: ChannelNumberRow; limit: ThrottleDecision } | { ok: false; problem: "not_found" } | RateLimited;

/**
 * Every change of a workspace's numbers may call the operator three times:
 * limited per workspace, whoever asks, before anything else.
 */
function spendChange(env: Env, workspaceId: string): Promise<Spent> {
  return spendWorkspaceHourly(env, workspaceId, "numberChange", "number changes");
}

const alreadyConnected = (): Refused => ({
  ok: false,
  problem: "refused",
  field: "upstream.phoneNumberId",
  reason:
    "This operator phone number is already connected (to this or another workspace), with a token the operator still honours; " +
    "disconnect it there first, or revoke that token at the operator and connect again.",
});

/** Connects a sandbox number at once, or a live one after the operator verified it and subscribed us to its account's webhooks. */
export async function connectNumber(env: Env, caller: Caller, input: ConnectInput): Promise<ConnectOutcome> {
  const spent = await spendChange(env, caller.workspaceId);
  if (!spent.ok) return spent;
  const workspace = await getWorkspaceWithLimits(env.DB, caller.workspaceId);
  if (!workspace) throw new Error("caller of an unknown workspace");
  const planLimit = {
    ok: false,
    problem: "plan_limit",
    reason: `The ${workspace.plan_id} plan allows at most ${workspace.max_numbers} connected number(s).`,
  } as const;
  const id = crypto.randomUUID();
  const at = isoNow();
  const base = {
    id,
    workspace_id: caller.workspaceId,
    status: "connected",
    created_at: at,
    disconnected_at: null,
    last_operator_error: null,
    last_operator_notice: null,
    unverified_since: null,
  } as const;
  let row: ChannelNumberRow;
  let profile: OperatorProfile | null = null;
  if (input.type === "sandbox") {
    row = {
      ...base,
      display_phone_number: input.displayPhoneNumber,
      upstream_type: "sandbox",
      upstream_phone_number_id: null,
      upstream_credentials: null,
      waba_id: null,
      verified_name: null,
      quality_rating: null,
      messaging_limit_tier: null,
      operator_checked_at: null,
    };
  } else {
    // A fast refusal before the operator is called; the insert below is the guarantee.
    if ((await countConnected(env.DB, caller.workspaceId)) >= workspace.max_numbers) return planLimit;
    // The operator first: whether the number is connected anywhere is told only to a caller who
    // has just proven control of it.
    const verified = await verifyAndSubscribe(env, input);
    if (!verified.ok) return verified;
    profile = verified.value;
    row = {
      ...base,
      display_phone_number: profile.displayPhoneNumber,
      upstream_type: "cloud",
      upstream_phone_number_id: input.phoneNumberId,
      upstream_credentials: await sealUpstreamCredentials(env, id, { accessToken: input.accessToken }),
      waba_id: input.wabaId,
      ...storedProfileOf(profile),
      operator_checked_at: at,
    };
    const existing = await findConnectedByUpstreamId(env.DB, input.phoneNumberId);
    if (existing) {
      if (!(await bindingRefused(env, existing))) return alreadyConnected();
      const claimed = await claimUnverifiedNumber(env.DB, existing.id, row);
      if (claimed.outcome !== "inserted") return claimed.outcome === "plan_limit" ? planLimit : alreadyConnected();
      if (claimed.old) {
        await Promise.all([workspaceChanged(env, claimed.old.workspace_id), numberChanged(env, claimed.old.id)]);
      }
      return connected(env, caller, row, profile, spent.decision, claimed.old);
    }
  }
  const outcome = await insertChannelNumberWithinPlan(env.DB, row);
  if (outcome === "plan_limit") return planLimit;
  if (outcome === "upstream_taken") return alreadyConnected();
  return connected(env, caller, row, profile, spent.decision, null);
}

/**
 * Whether the operator no longer honours the token of the number's current connection: already
 * seen (its binding is unverified), or refused now when asked with it (one call, which also marks
 * the binding). Another answer, or no answer, leaves the connection where it is.
 */
async function bindingRefused(env: Env, existing: ChannelNumberRow): Promise<boolean> {
  if (existing.unverified_since !== null) return true;
  if (!existing.upstream_phone_number_id || !existing.upstream_credentials) return false;
  const { accessToken } = await openUpstreamCredentials(env, existing);
  const answer = await fetchNumberProfile(env, existing.upstream_phone_number_id, accessToken);
  if (answer.ok || answer.problem !== "refused" || answer.field !== "upstream.accessToken") return false;
  await tokenRefused(env.DB, existing.id, answer.reason);
  return true;
}

/** What follows a stored connect: the workspace object's cached numbers dropped, the account's first templates read. */
async function connected(
  env: Env,
  caller: Caller,
  row: ChannelNumberRow,
  profile: OperatorProfile | null,
  limit: ThrottleDecision,
  claimedFrom: ChannelNumberRow | null,
): Promise<ConnectOutcome> {
  // Sends name the number at once: the workspace object's cached list of numbers is dropped.
  await workspaceChanged(env, caller.workspaceId);
  // Template sends are checked against the account's templates: the first pages come at once.
  if (row.waba_id) await syncOnConnect(env, row.waba_id);
  return { ok: true, row, profile, limit, claimedFrom };
}

/** A connected number of the caller's workspace; foreign, disconnected and malformed ids read as missing. */
const ownNumber = (env: Env, caller: Caller, id: string) =>
  findByUuid(id, (stored) => getConnectedNumber(env.DB, caller.workspaceId, stored));

/** Replaces a live number's access token once the operator confirmed it controls the number (and re-subscribes its account). */
export async function replaceNumberToken(
  env: Env,
  caller: Caller,
  numberId: string,
  accessToken: string,
): Promise<ReplaceOutcome> {
  const spent = await spendChange(env, caller.workspaceId);
  if (!spent.ok) return spent;
  const row = await ownNumber(env, caller, numberId);
  if (!row) return { ok: false, problem: "not_found" };
  if (row.upstream_type !== "cloud" || !row.upstream_phone_number_id) return { ok: false, problem: "sandbox" };
  // Numbers connected by the admin API before migration 0025 have no account id: only the number's record is checked.
  const verified = row.waba_id
    ? await verifyAndSubscribe(env, { phoneNumberId: row.upstream_phone_number_id, wabaId: row.waba_id, accessToken })
    : await fetchNumberProfile(env, row.upstream_phone_number_id, accessToken);
  if (!verified.ok) return verified;
  const p = verified.value;
  const sealed = await sealUpstreamCredentials(env, row.id, { accessToken });
  const updated = await replaceCredentialsAndProfile(env.DB, row.id, sealed, storedProfileOf(p), isoNow());
  if (!updated) return { ok: false, problem: "not_found" };
  // A number paused by a refused token sends again at once.
  await numberChanged(env, row.id);
  return { ok: true, row: updated, profile: p, limit: spent.decision };
}

/**
 * Disconnects a number of the caller's workspace. New sends naming it are refused
 * at once; messages still queued on it end `failed` with `number_disconnected`
 * (the number object's drain does this when told the number is gone), each with
 * its status webhook event: none is left pending in silence.
 */
export async function disconnectNumber(env: Env, caller: Caller, numberId: string): Promise<DisconnectOutcome> {
  const spent = await spendChange(env, caller.workspaceId);
  if (!spent.ok) return spent;
  const found = await ownNumber(env, caller, numberId);
  if (!found) return { ok: false, problem: "not_found" };
  const row = await disconnectOwnNumber(env.DB, caller.workspaceId, found.id, isoNow());
  if (!row) return { ok: false, problem: "not_found" };
  await workspaceChanged(env, caller.workspaceId);
  await numberChanged(env, row.id);
  return { ok: true, row, limit: spent.decision };
}
