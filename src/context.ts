/** Who is calling: resolved from the API key by the auth middleware. */
export interface Principal {
  workspaceId: string;
  keyId: string;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    principal: Principal;
  };
};
