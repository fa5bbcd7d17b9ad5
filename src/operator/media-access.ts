import { config } from "../config";
import { getNumberById, tokenRefused } from "../db/channel-numbers";
import { openOperatorCredentials } from "../lib/sealed-secrets";
import { locateMedia, type MediaAnswer, type MediaLocation, type OperatorMediaConfig } from "./media-api";

/**
 * Where a number's media is asked for, and with which token (opened here, at call time, kept
 * nowhere); null when the number has no operator account (a sandbox number) or is not the
 * workspace's. A disconnected number keeps its credentials for the operator's 7-day media window
 * (src/scheduled/sealed-token-retention.ts clears them after): its media is still fetched.
 */
export async function operatorMediaAccess(
  env: Env,
  channelNumberId: string,
  workspaceId: string,
): Promise<{ cfg: OperatorMediaConfig; token: string } | null> {
  const number = await getNumberById(env.DB, channelNumberId);
  if (
    !number ||
    number.workspace_id !== workspaceId ||
    number.upstream_type !== "cloud" ||
    !number.upstream_credentials
  )
    return null;
  const { accessToken } = await openOperatorCredentials(env, number);
  const { baseUrl, version, timeoutMs, mediaHosts } = config(env).operator;
  return { cfg: { baseUrl, version, timeoutMs, mediaHosts }, token: accessToken };
}

/** The operator's media lookup with the number's token; a refusal of the token itself marks the number's binding unverified. */
export async function locateNumberMedia(
  env: Env,
  channelNumberId: string,
  access: { cfg: OperatorMediaConfig; token: string },
  mediaId: string,
): Promise<MediaAnswer<MediaLocation>> {
  const located = await locateMedia(access.cfg, access.token, mediaId);
  if (located.kind === "retry" && located.tokenRefused) await tokenRefused(env.DB, channelNumberId, located.message);
  return located;
}
