import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { readSealedCookie, setSealedCookie } from "../../src/dashboard/sealed-cookie";

// The dashboard's sealed cookies (the flash, the workspace choice after sign-in) each have a purpose,
// and the key that seals one is derived for that purpose alone: a value sealed for one never opens
// as another, whatever its shape.

const app = new Hono<{ Bindings: Env }>()
  .post("/seal", async (c) => {
    await setSealedCookie(c, "sealed", c.req.query("purpose") ?? "", await c.req.json(), 60);
    return c.body(null, 204);
  })
  .get("/open", async (c) =>
    c.json({ value: (await readSealedCookie(c, "sealed", c.req.query("purpose") ?? "")) ?? null }),
  );

async function seal(purpose: string, value: unknown): Promise<string> {
  const res = await app.request(`/seal?purpose=${purpose}`, { method: "POST", body: JSON.stringify(value) }, env);
  const line = res.headers.getSetCookie().find((l) => l.startsWith("__Host-sealed="));
  expect(line).toBeDefined();
  return line!.split(";")[0]!;
}

const open = async (purpose: string, cookie: string) =>
  (
    (await (await app.request(`/open?purpose=${purpose}`, { headers: { Cookie: cookie } }, env)).json()) as {
      value: unknown;
    }
  ).value;

describe("sealed cookies", () => {
  it("open under the purpose they were sealed for, and under no other", async () => {
    const value = { memberIds: ["m1"], next: "/dashboard", expiresAt: 1 };
    const cookie = await seal("dashboard-flash-v1", value);
    expect(await open("dashboard-flash-v1", cookie)).toEqual(value);
    expect(await open("dashboard-workspace-choice-v1", cookie)).toBeNull();
    expect(await open("", cookie)).toBeNull();
  });

  it("a changed byte, or a value that was never sealed, opens as nothing", async () => {
    const cookie = await seal("dashboard-flash-v1", { notice: "hi" });
    const [name, sealed] = cookie.split("=") as [string, string];
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1)!;
    expect(await open("dashboard-flash-v1", `${name}=${flipped}`)).toBeNull();
    expect(await open("dashboard-flash-v1", `${name}=not.sealed`)).toBeNull();
  });
});
