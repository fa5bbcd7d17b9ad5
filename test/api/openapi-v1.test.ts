import { describe, expect, it } from "vitest";
import { call } from "../helpers/http";

// SPEC §4: every path and method of the public contract.
const SPEC_OPERATIONS: [string, string][] = [
  ["post", "/messages"],
  ["get", "/messages/{id}"],
  ["get", "/channel-numbers"],
  ["get", "/channel-numbers/{id}"],
  ["get", "/usage"],
  ["get", "/me"],
  ["get", "/webhooks"],
  ["post", "/webhooks"],
];

describe("OpenAPI document", () => {
  it("is served without auth, parses, is 3.1 and lists every SPEC operation", async () => {
    const res = await call("/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(doc.openapi).toMatch(/^3\.1\./);
    for (const [method, path] of SPEC_OPERATIONS) {
      expect(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`).toBeDefined();
    }
    // The send operation documents every status SPEC lists.
    expect(Object.keys(doc.paths["/messages"]!.post!.responses).sort()).toEqual([
      "200",
      "201",
      "400",
      "401",
      "403",
      "409",
      "429",
      "500",
    ]);
    // Admin routes are not part of the public contract.
    expect(Object.keys(doc.paths).some((p) => p.includes("admin"))).toBe(false);
  });

  it("documents every event we send in the 3.1 webhooks section", async () => {
    const doc = (await (await call("/api/v1/openapi.json")).json()) as {
      webhooks?: Record<string, { post?: unknown }>;
    };
    expect(Object.keys(doc.webhooks ?? {}).sort()).toEqual(["message.received", "message.status", "webhook.test"]);
    for (const hook of Object.values(doc.webhooks ?? {})) expect(hook.post).toBeDefined();
  });

  it("has a human-readable reference page at /docs", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toContain("/api/v1/openapi.json");
  });
});
