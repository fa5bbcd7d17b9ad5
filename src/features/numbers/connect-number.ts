import {
  claimUnverifiedNumber,
  tokenRefused,
  countConnected,
  findConnectedByOperatorId,
  insertChannelNumberWithinPlan,
  storedProfileOf,
  type ChannelNumberRow,
} from "../../db/channel-numbers";
import { getWorkspaceWithLimits } from "../../db/workspaces";
import { numberChanged, workspaceChanged } from "../../engine/numbers";
import { isoNow } from "../../lib/clock";
import { sealOperatorCredentials } from "../../lib/sealed-secrets";
import type { ThrottleDecision } from "../../lib/throttle-client";
import {
  fetchNumberProfile,
  verifyAndSubscribe,
  type OperatorField,
  type OperatorProfile,
} from "../../operator/account";
import type { Caller } from "../../domain/actor";
import type { RateLimited } from "../../domain/limit-check";
import { spendChange } from "./change-budget";
import { syncOnConnect } from "../templates/sync";
import { openOperatorCredentials } from "../../lib/sealed-secrets";

// Connecting a number (re-keying and disconnecting one are beside it): what the
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
export type Unavailable = { ok: false; problem: "unavailable"; reason: string };

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
      upstream_credentials: await sealOperatorCredentials(env, id, { accessToken: input.accessToken }),
      waba_id: input.wabaId,
      ...storedProfileOf(profile),
      operator_checked_at: at,
    };
    const existing = await findConnectedByOperatorId(env.DB, input.phoneNumberId);
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
  const { accessToken } = await openOperatorCredentials(env, existing);
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
