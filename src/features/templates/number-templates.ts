import type { ChannelNumberRow } from "../../db/channel-numbers";
import { numberWithTemplatesNamed } from "./store";
import { SANDBOX_TEMPLATES } from "../../operator/sandbox-templates";
import { LruTtl } from "../../domain/key-cache";
import { refreshIfStale } from "../numbers/refresh-health";
import type { StoredTemplate } from "../../domain/template";

/** What a template send needs to know of its number: whether it has templates, and those of the name. */
export interface SendTemplates {
  /** A sandbox number, or a live one with its business account id (one connected without it has none). */
  hasAccount: boolean;
  /** Every language of the name. */
  templates: StoredTemplate[];
}

// Per isolate, for 5 seconds (as API keys): a campaign sending one template many times reads D1
// once per isolate and name, not once per message (a text send reads D1 never). A status change
// reaches sends within those seconds; the operator refuses a paused template in between anyway.
const cache = new LruTtl<SendTemplates | null>(5_000, 1_000);

/**
 * The templates a connected number of the workspace can send under one name: a sandbox number's
 * built-in ones, a live number's business account's synced ones. Null when the number is not a
 * connected number of the workspace.
 */
export async function templatesForSend(
  db: D1Database,
  workspaceId: string,
  numberId: string,
  name: string,
): Promise<SendTemplates | null> {
  const key = `${workspaceId}\n${numberId}\n${name}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const found = await numberWithTemplatesNamed(db, workspaceId, numberId, name);
  const result =
    found === null
      ? null
      : found.operatorType === "sandbox"
        ? { hasAccount: true, templates: SANDBOX_TEMPLATES.filter((t) => t.name === name) }
        : { hasAccount: found.wabaId !== null, templates: found.templates };
  cache.set(key, result);
  return result;
}

/**
 * The account whose templates a number shows: its business account id, `sandbox`, or null (none
 * known, or the operator refused the token the workspace connected it with: the account's
 * templates are shown to a workspace only while its own token is honoured).
 */
export const accountOf = (
  number: Pick<ChannelNumberRow, "upstream_type" | "waba_id" | "unverified_since">,
): string | null =>
  number.upstream_type === "sandbox" ? "sandbox" : number.unverified_since === null ? number.waba_id : null;

/**
 * The workspace's live numbers with an account, each with its own token checked by the operator
 * within the hour (refreshIfStale: at most one call per number and hour), so that an account's
 * templates, synced with any honoured token, are shown only to a workspace whose own token is.
 */
export const withTokenChecked = (env: Env, numbers: readonly ChannelNumberRow[]): Promise<ChannelNumberRow[]> =>
  Promise.all(numbers.map((n) => (n.upstream_type === "cloud" && n.waba_id !== null ? refreshIfStale(env, n) : n)));
