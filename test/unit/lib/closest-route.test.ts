import { describe, expect, it } from "vitest";
import { closestRoute } from "../../../src/lib/closest-route";

const ROUTES = [
  { path: "/api/v1/*", method: "ALL" },
  { path: "/api/v1/messages", method: "POST" },
  { path: "/api/v1/messages", method: "GET" },
  { path: "/api/v1/messages/:id", method: "GET" },
  { path: "/api/v1/webhooks", method: "POST" },
  { path: "/api/v1/channel-numbers", method: "GET" },
];

describe("the closest route to a mistyped path", () => {
  it("names the route one typo away, with its methods sorted (middleware is not a method)", () => {
    expect(closestRoute(ROUTES, "/api/v1/mesages")).toEqual({ path: "/api/v1/messages", methods: ["GET", "POST"] });
    expect(closestRoute(ROUTES, "/api/v1/webhook")).toEqual({ path: "/api/v1/webhooks", methods: ["POST"] });
  });

  it("matches a parameter segment with anything, so only the fixed segments count", () => {
    expect(closestRoute(ROUTES, "/api/v1/mesages/m_123")).toEqual({ path: "/api/v1/messages/:id", methods: ["GET"] });
  });

  it("suggests nothing for an exact route, a path of another depth, or one too far from any route", () => {
    expect(closestRoute(ROUTES, "/api/v1/messages")).toBeNull();
    expect(closestRoute(ROUTES, "/api/v1/messages/m_1/events/x")).toBeNull();
    expect(closestRoute(ROUTES, "/api/v1/invoices")).toBeNull();
  });

  it("allows a third of the changed text in a long segment, and at most two edits in a short one", () => {
    // "chanel-numbrs": two edits. "chnnl-nmbrs": six edits in a 11-character segment: too many.
    expect(closestRoute(ROUTES, "/api/v1/chanel-numbrs")?.path).toBe("/api/v1/channel-numbers");
    expect(closestRoute(ROUTES, "/api/v1/chnnl-nmbrs")).toBeNull();
    expect(closestRoute(ROUTES, "/api/v1/webhoo")?.path).toBe("/api/v1/webhooks");
    expect(closestRoute(ROUTES, "/api/v1/webho")).toBeNull();
  });

  it("ignores wildcard routes as suggestions", () => {
    expect(closestRoute([{ path: "/static/*", method: "GET" }], "/static/x")).toBeNull();
  });
});
