import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { api, json } from "./http";
import { send, textMessage } from "./send";
import type { Tenant } from "./fixtures";
import { channelNumberStub } from "../../src/durable-objects/stubs";

/**
 * Seeds messages through the real API with a controlled clock: each send or
 * inbound message gets its own second (`advance` moves the test's fake clock).
 */
export function messageSeeder(advance: (ms: number) => void) {
  return {
    async sendAt(t: Tenant, numberId: string, to: string, body: string): Promise<string> {
      advance(1_000);
      const res = await send(t.key, crypto.randomUUID(), textMessage(numberId, body, to));
      expect(res.status).toBe(201);
      return (await json<{ jobId: string }>(res)).jobId;
    },
    async inbound(t: Tenant, numberId: string, from: string, body: string): Promise<string> {
      advance(1_000);
      const res = await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId: numberId, from, text: { body } },
      });
      expect(res.status).toBe(202);
      return (await json<{ messageId: string }>(res)).messageId;
    },
    /** Runs the number's alarm `rounds` times, a little over the pace window apart. */
    async drain(numberId: string, rounds = 6): Promise<void> {
      for (let i = 0; i < rounds; i++) {
        await runDurableObjectAlarm(channelNumberStub(env, numberId));
        advance(1_100);
      }
    },
  };
}
