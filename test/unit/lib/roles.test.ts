import { describe, expect, it } from "vitest";
import { grantableKeyRoles, hasRole, ROLES } from "../../../src/lib/roles";

describe("roles", () => {
  it("rank viewer < developer < owner, for members and keys alike", () => {
    const allowed = ROLES.flatMap((role) =>
      ROLES.filter((atLeast) => hasRole(role, atLeast)).map((a) => `${role}≥${a}`),
    );
    expect(allowed.sort()).toEqual(
      [
        "developer≥developer",
        "developer≥viewer",
        "owner≥developer",
        "owner≥owner",
        "owner≥viewer",
        "viewer≥viewer",
      ].sort(),
    );
  });

  it("a member grants a key their own role or below, never above", () => {
    expect(grantableKeyRoles("owner")).toEqual(["owner", "developer", "viewer"]);
    expect(grantableKeyRoles("developer")).toEqual(["developer", "viewer"]);
    expect(grantableKeyRoles("viewer")).toEqual(["viewer"]);
  });
});
