import { numberObject, workspaceObject } from "./objects";

/**
 * Local soak runs only: each named object ends itself (refused unless DEV_OBJECT_RESTARTS is "true").
 * The call that makes an object end fails with it: a failure is the restart. Returns how many ended.
 */
export async function restartObjects(
  env: Env,
  workspaceIds: readonly string[],
  channelNumberIds: readonly string[],
): Promise<number> {
  const ended = (call: Promise<void>) =>
    call.then(
      () => 0,
      () => 1,
    );
  const counts = await Promise.all([
    ...workspaceIds.map((id) => ended(workspaceObject(env, id).restartForSoak())),
    ...channelNumberIds.map((id) => ended(numberObject(env, id).restartForSoak())),
  ]);
  return counts.reduce<number>((a, b) => a + b, 0);
}
