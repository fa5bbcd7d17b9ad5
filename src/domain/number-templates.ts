import type { ChannelNumberRow } from "../db/channel-numbers";
import { templatesNamed } from "../db/message-templates";
import { SANDBOX_TEMPLATES } from "../upstream/sandbox-templates";
import type { StoredTemplate } from "./template";

/**
 * The templates a number can send under one name (every language): a sandbox number's built-in
 * ones, a live number's business account's synced ones (none for a number connected without an
 * account id).
 */
export async function numberTemplatesNamed(
  db: D1Database,
  number: Pick<ChannelNumberRow, "upstream_type" | "waba_id">,
  name: string,
): Promise<StoredTemplate[]> {
  if (number.upstream_type === "sandbox") return SANDBOX_TEMPLATES.filter((t) => t.name === name);
  return number.waba_id ? templatesNamed(db, number.waba_id, name) : [];
}

/** The account whose templates a number sends: its business account id, `sandbox`, or null (none known). */
export const accountOf = (number: Pick<ChannelNumberRow, "upstream_type" | "waba_id">): string | null =>
  number.upstream_type === "sandbox" ? "sandbox" : number.waba_id;
