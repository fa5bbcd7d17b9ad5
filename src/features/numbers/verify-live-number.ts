import { z } from "@hono/zod-openapi";
import { config, type ConfigVars } from "../../config";
import { ApiError } from "../../lib/errors";
import { log } from "../../lib/log";

/** The parts of the operator's answer that matter here (`GET /{phone-number-id}`, or its error object). */
const OperatorAnswer = z.object({
  id: z.string().optional(),
  error: z.object({ code: z.union([z.number(), z.string()]).optional() }).optional(),
});

/**
 * Proves, before a live number is connected, that the access token controls
 * the operator's phone number id: `GET {base}/{version}/{phoneNumberId}?fields=id,display_phone_number`
 * with the token must answer that same id. Without this, anyone with the admin
 * API could claim a phone number id they do not own, and the operator's
 * webhooks (routed by phone number id) would reach the wrong workspace.
 */
export async function verifyLiveNumber(env: ConfigVars, phoneNumberId: string, accessToken: string): Promise<void> {
  const { baseUrl, version, timeoutMs } = config(env).operator;
  const url = `${baseUrl.replace(/\/+$/, "")}/${version}/${phoneNumberId}?fields=id,display_phone_number`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { Authorization: `Bearer ${accessToken}` },
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    log("warn", "operator unreachable while verifying a number", {
      phoneNumberId,
      detail: err instanceof Error ? err.name : "unknown",
    });
    throw new ApiError(
      "internal_error",
      "The operator could not be reached to verify the number; nothing was stored. Retry later.",
    );
  }
  let body: z.infer<typeof OperatorAnswer> = {};
  try {
    body = OperatorAnswer.parse(await res.json());
  } catch {
    // judged by the status alone
  }
  const code = body.error?.code;

  if (res.ok && body.id === phoneNumberId) return;
  if (res.status >= 500) {
    log("warn", "operator error while verifying a number", { phoneNumberId, status: res.status });
    throw new ApiError(
      "internal_error",
      `The operator answered HTTP ${res.status} while verifying the number; nothing was stored. Retry later.`,
    );
  }
  if (res.status === 401 || code === 190) {
    throw new ApiError("invalid_request", "The operator refused the access token.", {
      details: [
        {
          path: "upstream.accessToken",
          rule: "upstream_verification",
          message: `The operator refused this token (HTTP ${res.status}${code !== undefined ? `, code ${String(code)}` : ""}).`,
        },
      ],
    });
  }
  throw new ApiError("invalid_request", "The access token does not control this phone number id.", {
    details: [
      {
        path: "upstream.phoneNumberId",
        rule: "upstream_verification",
        message: `The operator did not confirm phone number id ${phoneNumberId} for this token (HTTP ${res.status}${code !== undefined ? `, code ${String(code)}` : ""}).`,
      },
    ],
  });
}
