import { config } from "../config";
import type { ChannelNumberRow } from "../db/channel-numbers";
import { openOperatorCredentials } from "../lib/sealed-secrets";
import type { OperatorAdapter } from "./adapter";
import { OperatorApiAdapter } from "./api-adapter";
import { isTestContact } from "../db/sandbox-test-contacts";
import { SandboxAdapter } from "./sandbox";

/**
 * Builds a number's adapter; credentials are decrypted here, at call time, and kept nowhere.
 * `windowOpen`: whether a recipient wrote in the last 24 hours (the number object's contacts),
 * which the sandbox enforces as the operator does; live numbers learn it from the operator.
 */
export async function adapterFor(
  env: Env,
  row: ChannelNumberRow,
  windowOpen: (to: string) => boolean,
): Promise<OperatorAdapter> {
  if (row.upstream_type === "sandbox") {
    return new SandboxAdapter(
      { mayReceiveFreeForm: async (to) => windowOpen(to) || (await isTestContact(env.DB, row.id, to)) },
      { env, workspaceId: row.workspace_id, channelNumberId: row.id },
    );
  }
  if (!row.upstream_credentials || !row.upstream_phone_number_id) throw new Error("live number without credentials");
  const { accessToken } = await openOperatorCredentials(env, row);
  const { baseUrl, version, messagingProduct, timeoutMs, stampCalls } = config(env).operator;
  return new OperatorApiAdapter({
    baseUrl,
    version,
    phoneNumberId: row.upstream_phone_number_id,
    accessToken,
    messagingProduct,
    timeoutMs,
    stampCalls,
    media: { env, workspaceId: row.workspace_id, channelNumberId: row.id },
  });
}
