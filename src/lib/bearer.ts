import { ApiError } from "./errors";

/**
 * The credentials of `Authorization: Bearer <token>`. The scheme is
 * case-insensitive and followed by one or more spaces (RFC 9110 §11.4); the
 * token is one run of visible characters. Anything else is null.
 */
export function bearerToken(header: string | undefined, maxLength = 512): string | null {
  if (!header || header.length > maxLength) return null;
  const match = /^bearer +([\x21-\x7e]+)$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * 401 with `WWW-Authenticate: Bearer` (RFC 6750 §3): no error parameter when no
 * credentials were sent, `error="invalid_token"` when they were refused.
 */
export function unauthorized(message: string, realm: string, sentCredentials: boolean): ApiError {
  const challenge = `Bearer realm="${realm}"${sentCredentials ? ', error="invalid_token"' : ""}`;
  return new ApiError("unauthorized", message, { headers: { "WWW-Authenticate": challenge } });
}
