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
