/** Objects are named deterministically, so any Worker or object finds the same one. */
export const workspaceStub = (env: Env, workspaceId: string) =>
  env.WORKSPACE.get(env.WORKSPACE.idFromName(workspaceId));

export const channelNumberStub = (env: Env, channelNumberId: string) =>
  env.CHANNEL_NUMBER.get(env.CHANNEL_NUMBER.idFromName(channelNumberId));
