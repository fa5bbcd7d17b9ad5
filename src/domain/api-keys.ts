import { randomBytes, sha256Hex, toBase64Url } from "../lib/crypto";

// 32 random bytes in base64url are 43 characters.
const SECRET_PART = /^[A-Za-z0-9_-]{43}$/;

export const keyPrefix = (env: Pick<Env, "API_KEY_PREFIX">): string => `${env.API_KEY_PREFIX}live_`;

export function generateApiKey(env: Pick<Env, "API_KEY_PREFIX">): string {
  return `${keyPrefix(env)}${toBase64Url(randomBytes(32))}`;
}

/** True when `key` has our shape; anything else is refused before it is hashed or looked up. */
export function isWellFormedKey(env: Pick<Env, "API_KEY_PREFIX">, key: string): boolean {
  const prefix = keyPrefix(env);
  return key.startsWith(prefix) && SECRET_PART.test(key.slice(prefix.length));
}

export const hashApiKey = (key: string): Promise<string> => sha256Hex(key);
