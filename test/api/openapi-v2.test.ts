import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/http";
import { SendMessageRequestV2 } from "../../src/domain/send-request-v2";

// The v2 document (/api/v2/openapi.json) holds to the same rules as v1's, covers every v1
// operation (v2 keeps them all) plus the template operations, and leaves v1's document alone.

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  parameters?: { name: string; in: string; example?: unknown; schema?: { example?: unknown } }[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<
    string,
    { headers?: Record<string, { $ref: string }>; content?: Record<string, { example?: unknown }> }
  >;
}
interface Doc {
  openapi: string;
  info: { version: string; license?: unknown };
  servers: { url: string }[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
}

const docOf = async (version: "v1" | "v2") => {
  const res = await call(`/api/${version}/openapi.json`);
  expect(res.status).toBe(200);
  return json<Doc>(res);
};
const operations = (entries: Doc["paths"]) =>
  Object.entries(entries).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );

describe("the v2 OpenAPI document", () => {
  it("is served without a key, 3.1, on /api/v2, and has every v1 path plus the template and media operations and read marks", async () => {
    const [v1, v2] = await Promise.all([docOf("v1"), docOf("v2")]);
    expect(v2.openapi).toBe("3.1.0");
    expect(v2.servers).toEqual([{ url: "/api/v2", description: "This deployment" }]);
    expect(Object.keys(v2.paths).sort()).toEqual(
      [
        ...Object.keys(v1.paths),
        "/templates",
        "/templates/{name}",
        "/messages/{id}/read",
        "/media",
        "/media/{id}",
        "/media/{id}/content",
      ].sort(),
    );
    expect(v2.paths["/messages"]!.post!.operationId).toBe("sendMessageV2");
    expect(v1.paths["/messages"]!.post!.operationId).toBe("sendMessage");
    expect(v2.paths["/messages"]!.get!.parameters!.map((p) => p.name)).toContain("type");
    expect(v1.paths["/messages"]!.get!.parameters!.map((p) => p.name)).not.toContain("type");
    expect(v1.paths["/templates"]).toBeUndefined();
  });

  it("names, tags and exemplifies every operation, with unique operationIds and X-Request-Id everywhere", async () => {
    const d = await docOf("v2");
    const declared = new Set(d.tags?.map((t) => t.name));
    const all = [...operations(d.paths), ...operations(d.webhooks)];
    for (const { name, op } of all) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]+$/);
      for (const tag of op.tags ?? []) expect(declared.has(tag), `${name}: tag ${tag}`).toBe(true);
      expect(op.summary, name).toBeTruthy();
    }
    expect(new Set(all.map(({ op }) => op.operationId)).size).toBe(all.length);
    for (const { name, op } of operations(d.paths)) {
      for (const [status, res] of Object.entries(op.responses)) {
        expect(res.headers?.["X-Request-Id"], `${name} ${status}`).toBeDefined();
        for (const media of Object.values(res.content ?? {})) expect(media.example, `${name} ${status}`).toBeDefined();
      }
      for (const media of Object.values(op.requestBody?.content ?? {})) expect(media.example, name).toBeDefined();
      for (const p of op.parameters ?? []) expect(p.example ?? p.schema?.example, `${name} ${p.name}`).toBeDefined();
    }
  });

  it("its send example is a valid v2 template send", async () => {
    const d = await docOf("v2");
    const example = d.paths["/messages"]!.post!.requestBody!.content["application/json"]!.example;
    expect(SendMessageRequestV2.safeParse(example).success).toBe(true);
    expect(example).toMatchObject({ type: "template", template: { name: "order_update" } });
  });

  it("names v2's own error code and rich message views, which v1's document does not have", async () => {
    const schemasOf = async (version: string) => json<Schemas>(await call(`/api/${version}/openapi.json`));
    const [v1, v2] = await Promise.all([schemasOf("v1"), schemasOf("v2")]);
    const codes = (d: Schemas) => d.components.schemas.Error!.properties!.error!.properties!.code!.enum!;
    expect(codes(v2)).toContain("service_window_closed");
    expect(codes(v1)).not.toContain("service_window_closed");
    expect(codes(v2)).toEqual([...codes(v1), "service_window_closed"]);
    expect(Object.keys(v2.components.schemas)).toEqual(
      expect.arrayContaining(["MessageV2", "OutboundMessageV2", "MessageListV2", "Message", "MessageList"]),
    );
    expect(v1.components.schemas.OutboundMessageV2).toBeUndefined();
    expect(v2.components.schemas.OutboundMessageV2!.properties!.type!.enum).toEqual(
      expect.arrayContaining(["text", "template", "image", "interactive", "location", "contacts", "reaction"]),
    );
  });
});

interface SchemaNode {
  enum?: string[];
  properties?: Record<string, SchemaNode>;
}
interface Schemas {
  components: { schemas: Record<string, SchemaNode> };
}
