import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, newRouter } from "../../lib/openapi";
import { SEALED_COLUMNS, countStaleSealed, replaceSealed, staleSealedRows } from "../../db/sealed-columns";
import { currentPrefix, open, seal } from "../../lib/secret-box";
import { errorText, log } from "../../lib/log";

const Counts = z.object({ upstreamCredentials: z.number().int(), webhookSecrets: z.number().int() });

const ResealResult = z
  .object({
    resealed: Counts,
    unreadable: z.array(z.object({ table: z.string(), id: z.string() })).openapi({
      description:
        "Values no configured key opens (sealed under a key that was removed too early): they are left as they are.",
    }),
    remaining: Counts.openapi({
      description: "Values still not sealed under the current key, unreadable ones included. Call again until 0.",
    }),
  })
  .openapi("AdminResealResult");

const reseal = createRoute({
  method: "post",
  path: "/secrets/reseal",
  summary: "Re-seal stored secrets under the current CREDENTIALS_ENCRYPTION_KEY",
  description:
    "Key rotation: set the new key as CREDENTIALS_ENCRYPTION_KEY and the previous one in CREDENTIALS_ENCRYPTION_KEYS_OLD, deploy, " +
    "then call this until `remaining` is 0 (each call handles up to `limit` rows per column), then remove the old key. " +
    "Also upgrades v1 values (no key id, no row binding).",
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }) },
  responses: { 200: jsonContent(ResealResult, "What this call did and what is left."), ...errorResponses(400, 401) },
});

export const adminSecretRoutes = newRouter().openapi(reseal, async (c) => {
  const { limit } = c.req.valid("query");
  const prefix = await currentPrefix(c.env);
  const resealed = { upstreamCredentials: 0, webhookSecrets: 0 };
  const unreadable: { table: string; id: string }[] = [];
  for (const col of SEALED_COLUMNS) {
    for (const row of await staleSealedRows(c.env.DB, col, prefix, limit)) {
      let plaintext: string;
      try {
        plaintext = await open(c.env, col.purpose, row.id, row.value);
      } catch (err) {
        log("warn", "sealed value could not be opened for re-sealing", {
          table: col.table,
          id: row.id,
          detail: errorText(err),
        });
        unreadable.push({ table: col.table, id: row.id });
        continue;
      }
      // A webhook's sealed_secret also guards its health updates: a delivery in flight while its
      // secret is re-sealed skips one health update, which the next attempt makes.
      if (await replaceSealed(c.env.DB, col, row.id, row.value, await seal(c.env, col.purpose, row.id, plaintext)))
        resealed[col.name]++;
    }
  }
  const [upstreamCredentials, webhookSecrets] = await Promise.all(
    SEALED_COLUMNS.map((col) => countStaleSealed(c.env.DB, col, prefix)),
  );
  return c.json(
    { resealed, unreadable, remaining: { upstreamCredentials: upstreamCredentials!, webhookSecrets: webhookSecrets! } },
    200,
  );
});
