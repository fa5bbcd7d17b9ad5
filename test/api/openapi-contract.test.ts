import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/http";
import { IDEMPOTENCY_KEY, SendMessageRequest } from "../../src/domain/send-request";
import { E164_DIGITS, USER_ID } from "../../src/messages/recipient";

interface Schema {
  type?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  example?: unknown;
  properties?: Record<string, Schema>;
  $ref?: string;
}
interface Parameter {
  name: string;
  in: string;
  example?: unknown;
  schema?: Schema;
}
interface Response {
  description: string;
  headers?: Record<string, { $ref: string }>;
  content?: Record<string, { example?: unknown }>;
}
interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, Response>;
}
interface Doc {
  info: { license?: { name: string; url?: string } };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; headers: Record<string, unknown> };
}

const doc = async () => json<Doc>(await call("/api/v1/openapi.json"));
const operations = (entries: Doc["paths"]) =>
  Object.entries(entries).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );

describe("the OpenAPI document as a contract", () => {
  it("names and tags every operation, with a unique operationId and declared tags", async () => {
    const d = await doc();
    const declared = new Set(d.tags?.map((t) => t.name));
    const all = [...operations(d.paths), ...operations(d.webhooks)];
    expect(all.length).toBeGreaterThan(15);
    for (const { name, op } of all) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z]+$/);
      expect(op.tags?.length, name).toBeGreaterThan(0);
      for (const tag of op.tags ?? []) expect(declared.has(tag), `${name}: tag ${tag}`).toBe(true);
      expect(op.summary, name).toBeTruthy();
    }
    expect(new Set(all.map(({ op }) => op.operationId)).size).toBe(all.length);
    expect(d.tags?.every((t) => t.description)).toBe(true);
  });

  it("declares X-Request-Id on every response and an example for every body and parameter", async () => {
    const d = await doc();
    for (const { name, op } of operations(d.paths)) {
      for (const [status, res] of Object.entries(op.responses)) {
        expect(res.headers?.["X-Request-Id"], `${name} ${status}`).toEqual({
          $ref: "#/components/headers/X-Request-Id",
        });
        for (const media of Object.values(res.content ?? {}))
          expect(media.example, `${name} ${status} example`).toBeDefined();
      }
      for (const media of Object.values(op.requestBody?.content ?? {}))
        expect(media.example, `${name} request example`).toBeDefined();
      for (const p of op.parameters ?? [])
        expect(p.example ?? p.schema?.example, `${name} ${p.in} ${p.name} example`).toBeDefined();
    }
    for (const { name, op } of operations(d.webhooks)) {
      for (const media of Object.values(op.requestBody?.content ?? {}))
        expect(media.example, `${name} example`).toBeDefined();
    }
    expect(d.components.headers["X-Request-Id"]).toBeDefined();
  });

  it("declares Retry-After and the rate-limit fields on 429 and the rate-limit fields on an accepted send", async () => {
    const d = await doc();
    const send = d.paths["/messages"]!.post!;
    const rate = ["RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
    expect(Object.keys(send.responses["201"]!.headers ?? {})).toEqual(
      expect.arrayContaining(["X-Request-Id", ...rate]),
    );
    expect(Object.keys(send.responses["429"]!.headers ?? {})).toEqual(
      expect.arrayContaining(["X-Request-Id", "Retry-After", ...rate]),
    );
    for (const legacy of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]) {
      expect(d.components.headers[legacy]).toMatchObject({ deprecated: true });
    }
  });

  it("marks the webhook events as needing no API key, and has a license", async () => {
    const d = await doc();
    for (const { name, op } of operations(d.webhooks)) expect(op.security, name).toEqual([]);
    expect(d.info.license).toEqual({ name: "MIT", url: expect.stringMatching(/^https:\/\//) });
  });
});

// The document's patterns and lengths are what the validators enforce: for each
// sample, the JSON Schema constraint and the zod schema must agree.
describe("constraints in the document match the validators", () => {
  const jsonSchemaAccepts = (s: Schema, v: string) =>
    (s.pattern === undefined || new RegExp(s.pattern, "u").test(v)) &&
    (s.minLength === undefined || [...v].length >= s.minLength) &&
    (s.maxLength === undefined || [...v].length <= s.maxLength);

  it("`to`: pattern and length", async () => {
    const d = await doc();
    const to = d.components.schemas.SendMessageRequest!.properties!.to!;
    expect(to.pattern).toBe(E164_DIGITS.source);
    const samples = [
      "5511999998888",
      "1",
      "1".repeat(32),
      "1".repeat(33),
      "",
      "+5511999998888",
      "05511999998888",
      "55 11",
      "55a1",
      "٣٣٣",
      "9".repeat(31),
    ];
    for (const v of samples) {
      const zodAccepts = SendMessageRequest.shape.to.safeParse(v).success;
      expect(jsonSchemaAccepts(to, v), JSON.stringify(v)).toBe(zodAccepts);
    }
  });

  it("`toUserId`: pattern and length", async () => {
    const d = await doc();
    const toUserId = d.components.schemas.SendMessageRequest!.properties!.toUserId!;
    expect(toUserId.pattern).toBe(USER_ID.source);
    const samples = [
      "US.13491208655302741918",
      "US.ENT.11815799212886844830",
      "BR.1",
      `US.${"1".repeat(157)}`,
      `US.${"1".repeat(158)}`,
      "",
      "us.1",
      "US",
      "US.",
      "US..1",
      "US.1 2",
      "5511999998888",
      "+US.1",
    ];
    for (const v of samples) {
      const zodAccepts = SendMessageRequest.shape.toUserId.safeParse(v).success;
      expect(jsonSchemaAccepts(toUserId, v), JSON.stringify(v)).toBe(zodAccepts);
    }
  });

  it("`text.body`: length in code points", async () => {
    const d = await doc();
    const body = d.components.schemas.SendMessageRequest!.properties!.text!.properties!.body!;
    expect([body.minLength, body.maxLength]).toEqual([1, 4096]);
    const samples = [
      "",
      "a",
      "a".repeat(4096),
      "a".repeat(4097),
      "😀".repeat(4096),
      "😀".repeat(4097),
      "é".repeat(4096),
    ];
    for (const v of samples) {
      const zodAccepts = SendMessageRequest.shape.text.safeParse({ body: v }).success;
      expect(jsonSchemaAccepts(body, v), `${v.length} UTF-16 units`).toBe(zodAccepts);
    }
  });

  it("`Idempotency-Key`: the header parameter states the validator's pattern", async () => {
    const d = await doc();
    const header = d.paths["/messages"]!.post!.parameters!.find(
      (p) => p.in === "header" && p.name === "idempotency-key",
    )!;
    expect(header.schema?.pattern).toBe(IDEMPOTENCY_KEY.source);
    for (const v of [
      "6f1c2a7e-3b0d-4e59-9d7b-2f3c1a9e8b10",
      "k".repeat(255),
      "k".repeat(256),
      "",
      "clé",
      "a\u0001",
      "with space",
    ]) {
      expect(jsonSchemaAccepts(header.schema!, v), JSON.stringify(v)).toBe(IDEMPOTENCY_KEY.test(v));
    }
  });
});
