import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";

/**
 * Holds every request to an object until `release()` (blockConcurrencyWhile),
 * so that a test can keep a send waiting mid-admission. Resolves once the hold
 * is in place; `release()` resolves when the holding call has finished.
 */
export async function holdObject(stub: DurableObjectStub): Promise<{ release: () => Promise<void> }> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const holding = runInDurableObject(stub, (_, state) => state.blockConcurrencyWhile(() => gate));
  await settleIo();
  return {
    release: async () => {
      open();
      await holding;
    },
  };
}

/** Lets other requests in this isolate run (a send reaches the held object) before the test goes on. */
export const settleIo = () => new Promise((resolve) => setTimeout(resolve, 50));

/**
 * Runs `fn` inside the object right after its next transaction commits, before its caller goes on:
 * a commit that takes as long as `fn` makes it (a test moves the clock there).
 */
export async function onNextCommit(stub: DurableObjectStub, fn: () => void): Promise<void> {
  await runInDurableObject(stub, (_, state) => {
    const transactionSync = state.storage.transactionSync.bind(state.storage);
    let pending = true;
    state.storage.transactionSync = <T>(work: () => T): T => {
      const result = transactionSync(work);
      if (pending) {
        pending = false;
        fn();
      }
      return result;
    };
  });
}

/** Crashes the object (what it held in memory is gone; a call it was serving fails with `reason`). */
export async function crashObject(stub: DurableObjectStub, reason: string): Promise<void> {
  // The crash is the call's own outcome: it rejects with `reason`.
  await runInDurableObject(stub, (_, state) => state.abort(reason)).catch(() => undefined);
}

/**
 * Stubs of the objects as the suite runs them (test/worker.ts): production's classes with what only
 * tests read. The bindings are typed from production's classes (worker-configuration.d.ts); these
 * are the same objects, seen with their test methods.
 */
type TestWorkspace = import("../worker").WorkspaceDurableObject;
type TestNumber = import("../worker").ChannelNumberDurableObject;
type TestShard = import("../worker").MessageHistoryDurableObject;
type TestThrottle = import("../worker").ThrottleDurableObject;

export const testWorkspace = (workspaceId: string): DurableObjectStub<TestWorkspace> =>
  (env.WORKSPACE as unknown as DurableObjectNamespace<TestWorkspace>).get(env.WORKSPACE.idFromName(workspaceId));

export const testNumber = (channelNumberId: string): DurableObjectStub<TestNumber> =>
  (env.CHANNEL_NUMBER as unknown as DurableObjectNamespace<TestNumber>).get(
    env.CHANNEL_NUMBER.idFromName(channelNumberId),
  );

/** A workspace's history shard of one UTC day, with its test methods. */
export const testShard = (workspaceId: string, day: number): DurableObjectStub<TestShard> =>
  (env.HISTORY as unknown as DurableObjectNamespace<TestShard>).get(env.HISTORY.idFromName(`${workspaceId}:${day}`));

/** The shared throttle's object of one scope, with its test methods. */
export const testThrottle = (scope: string): DurableObjectStub<TestThrottle> =>
  (env.THROTTLE as unknown as DurableObjectNamespace<TestThrottle>).get(env.THROTTLE.idFromName(scope));
