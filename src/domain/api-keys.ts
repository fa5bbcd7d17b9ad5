import { config, type ConfigVars } from "../config";
import { randomBytes, sha256Hex, toBase64Url } from "../lib/crypto";
import type { KeyRole } from "../lib/roles";

// 32 random bytes in base64url are 43 characters.
const SECRET_PART = /^[A-Za-z0-9_-]{43}$/;

export const keyPrefix = (env: ConfigVars): string => `${config(env).apiKeyPrefix}live_`;

export function generateApiKey(env: ConfigVars): string {
  return `${keyPrefix(env)}${toBase64Url(randomBytes(32))}`;
}

/** True when `key` has our shape; anything else is refused before it is hashed or looked up. */
export function isWellFormedKey(env: ConfigVars, key: string): boolean {
  const prefix = keyPrefix(env);
  return key.startsWith(prefix) && SECRET_PART.test(key.slice(prefix.length));
}

/** What names a key to people: never the key itself. */
interface KeyNaming {
  name: string | null;
  last_four: string;
}

/** How a key is named in the audit log and lists: its name and last four characters, never the key. */
export const keyLabel = (row: KeyNaming): string => `"${row.name ?? "(unnamed)"}" (…${row.last_four})`;

/** The audit entry of a new key: its label and its role, the one thing about it that never changes. */
export const keyCreatedDetail = (row: KeyNaming & { role: KeyRole }): string => `${keyLabel(row)}, role ${row.role}`;

export const hashApiKey = (key: string): Promise<string> => sha256Hex(key);
