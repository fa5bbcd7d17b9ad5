import type { KeyRole } from "./lib/roles";

/** Who is calling: resolved from the API key by the auth middleware. */
export interface Principal {
  workspaceId: string;
  keyId: string;
  /** The key's role, fixed at creation: checked against each route's `x-key-role` (middleware/key-role.ts). */
  role: KeyRole;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    principal: Principal;
    /** The admin token's fingerprint (`admin-token:…`), on admin API requests once authenticated. */
    adminActor: string;
    /** The Content-Security-Policy nonce of this response's inline scripts and styles (HTML pages). */
    cspNonce: string;
  };
};
