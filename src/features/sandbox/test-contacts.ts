import type { ChannelNumberRow } from "../../db/channel-numbers";
import {
  addTestContact,
  listTestContacts,
  MAX_TEST_CONTACTS_PER_NUMBER,
  removeTestContact,
  type TestContactRow,
} from "../../db/sandbox-test-contacts";
import { isoNow } from "../../lib/clock";
import { spendWorkspaceHourly, type RateLimited, type Spent } from "../../domain/limit-check";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { E164_DIGITS } from "../../messages/recipient";

// A sandbox number's test contacts (recipients it sends to outside the 24-hour window): what
// /api/v1/sandbox/test-contacts and the dashboard's number page share, so that both refuse the
// same input and hold to the same bound. Each caller finds the number itself (404 when it is not
// the workspace's) and turns the outcomes into its own answer.

export { MAX_TEST_CONTACTS_PER_NUMBER };

export const PHONE_RULE = "E.164 digits without '+', for example 5511999998888.";
export const NOT_SANDBOX = "Test contacts exist only on sandbox numbers; a live number's window is the operator's.";
export const FULL = `A sandbox number has at most ${MAX_TEST_CONTACTS_PER_NUMBER} test contacts: remove one first.`;

type NotSandbox = { ok: false; problem: "not_sandbox"; reason: string };
type BadPhone = { ok: false; problem: "invalid_phone"; reason: string };

export type AddOutcome =
  | { ok: true; added: boolean; contact: TestContactRow; limit: ThrottleDecision }
  | NotSandbox
  | BadPhone
  | RateLimited
  | { ok: false; problem: "full"; reason: string };

export type RemoveOutcome =
  | { ok: true; limit: ThrottleDecision }
  | NotSandbox
  | BadPhone
  | RateLimited
  | { ok: false; problem: "not_a_test_contact"; reason: string };

type Stores = Pick<Env, "DB" | "THROTTLE">;

/** Every change spends from the workspace's budget first, whoever asks: each one is an audit entry. */
function spendChange(env: Stores, number: ChannelNumberRow): Promise<Spent> {
  return spendWorkspaceHourly(env, number.workspace_id, "testContactChange", "test contact changes");
}

const notSandbox = (number: ChannelNumberRow): NotSandbox | null =>
  number.upstream_type === "sandbox" ? null : { ok: false, problem: "not_sandbox", reason: NOT_SANDBOX };
const badPhone = (phone: string): BadPhone | null =>
  E164_DIGITS.test(phone) ? null : { ok: false, problem: "invalid_phone", reason: `The phone must be ${PHONE_RULE}` };

/** The number's test contacts, oldest first (none for a live number). */
export async function testContactsOf(db: D1Database, number: ChannelNumberRow): Promise<TestContactRow[]> {
  return number.upstream_type === "sandbox" ? listTestContacts(db, number.id) : [];
}

/** Marks `phone` as a test contact of the sandbox `number` (`added: false` when it already was one). */
export async function addSandboxTestContact(env: Stores, number: ChannelNumberRow, phone: string): Promise<AddOutcome> {
  const refused = notSandbox(number) ?? badPhone(phone);
  if (refused) return refused;
  const spent = await spendChange(env, number);
  if (!spent.ok) return spent;
  const db = env.DB;
  const at = isoNow();
  const outcome = await addTestContact(db, number.id, phone, at);
  if (outcome === "full") return { ok: false, problem: "full", reason: FULL };
  const row = (await listTestContacts(db, number.id)).find((r) => r.phone === phone);
  return {
    ok: true,
    added: outcome === "added",
    contact: { phone, created_at: row?.created_at ?? at },
    limit: spent.decision,
  };
}

/** Unmarks `phone`. */
export async function removeSandboxTestContact(
  env: Stores,
  number: ChannelNumberRow,
  phone: string,
): Promise<RemoveOutcome> {
  const refused = notSandbox(number) ?? badPhone(phone);
  if (refused) return refused;
  const spent = await spendChange(env, number);
  if (!spent.ok) return spent;
  if (!(await removeTestContact(env.DB, number.id, phone)))
    return { ok: false, problem: "not_a_test_contact", reason: "That phone is not a test contact of this number." };
  return { ok: true, limit: spent.decision };
}
