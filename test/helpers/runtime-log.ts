import { env } from "cloudflare:workers";
import { vi } from "vitest";

const service = (path: string, init?: RequestInit) => env.RUNTIME_LOG.fetch(`http://runtime-log${path}`, init);

/**
 * Declares a line the runtime is expected to log (an uncaught exception of a Durable Object
 * whose storage a fault-injection test broke, a warning about a header the test sends on
 * purpose): it is captured instead of printed, and `seen()` waits for it and returns it.
 * `end()` stops capturing; call it once the expected lines were seen.
 */
export async function expectRuntimeLog(pattern: RegExp) {
  const id = crypto.randomUUID();
  await service(`/expect?id=${id}`, {
    method: "POST",
    body: JSON.stringify({ source: pattern.source, flags: pattern.flags }),
  });
  return {
    async seen(atLeast = 1): Promise<string[]> {
      return vi.waitFor(
        async () => {
          const lines = (await (await service(`/seen?id=${id}`)).json()) as string[];
          if (lines.length < atLeast)
            throw new Error(`expected ${atLeast} runtime log line(s) matching ${pattern}, saw ${lines.length}`);
          return lines;
        },
        { timeout: 5_000, interval: 20 },
      );
    },
    async end(): Promise<void> {
      await service(`/expect?id=${id}`, { method: "DELETE" });
    },
  };
}
