import { describe, expect, it } from "vitest";
import { allowedMethods } from "../../../src/lib/allowed-methods";

const ROUTES = [
  { path: "*", method: "ALL" },
  { path: "/api/v1/messages", method: "POST" },
  { path: "/api/v1/messages", method: "GET" },
  { path: "/api/v1/messages/:id", method: "GET" },
  { path: "/api/v1/webhooks/:id", method: "DELETE" },
  { path: "/static/*", method: "GET" },
  { path: "/a.b", method: "GET" },
];

describe("the methods a path answers (the Allow header of a 405)", () => {
  it("lists every method of the routes that match, sorted, with HEAD wherever GET is", () => {
    expect(allowedMethods(ROUTES, "/api/v1/messages")).toEqual(["GET", "HEAD", "POST"]);
    expect(allowedMethods(ROUTES, "/api/v1/webhooks/w_1")).toEqual(["DELETE"]);
  });

  it("matches a parameter as one segment and a star as anything", () => {
    expect(allowedMethods(ROUTES, "/api/v1/messages/m_1")).toEqual(["GET", "HEAD"]);
    expect(allowedMethods(ROUTES, "/api/v1/messages/m_1/events")).toEqual([]);
    expect(allowedMethods(ROUTES, "/static/dashboard/app.css")).toEqual(["GET", "HEAD"]);
  });

  it("middleware does not make a path known, and a path's dots are literal", () => {
    expect(allowedMethods(ROUTES, "/nowhere")).toEqual([]);
    expect(allowedMethods(ROUTES, "/axb")).toEqual([]);
    expect(allowedMethods(ROUTES, "/a.b")).toEqual(["GET", "HEAD"]);
  });
});
