import { describe, expect, it } from "vitest";
import { splitStatements } from "../../../bench/cost/statements";

describe("splitStatements (the cost meter counts each statement of a multi-statement exec)", () => {
  it("splits at top-level semicolons and drops empty and comment-only pieces", () => {
    const sql = `
      -- the outbox; one row per message
      CREATE TABLE IF NOT EXISTS a (x INTEGER);
      /* an index; partial */
      CREATE INDEX IF NOT EXISTS a_x ON a (x) WHERE x > 0;
    `;
    expect(splitStatements(sql).map((s) => s.replace(/\s+/g, " ").trim())).toEqual([
      "-- the outbox; one row per message CREATE TABLE IF NOT EXISTS a (x INTEGER)",
      "/* an index; partial */ CREATE INDEX IF NOT EXISTS a_x ON a (x) WHERE x > 0",
    ]);
  });

  it("keeps semicolons inside quotes and identifiers", () => {
    const sql = `INSERT INTO t (v) VALUES ('a;b'); SELECT "c;d", [e;f], \`g;h\` FROM t`;
    expect(splitStatements(sql)).toEqual([`INSERT INTO t (v) VALUES ('a;b')`, ` SELECT "c;d", [e;f], \`g;h\` FROM t`]);
  });

  it("leaves a single statement whole", () => {
    expect(splitStatements("SELECT 1")).toEqual(["SELECT 1"]);
    expect(splitStatements("SELECT 1;")).toEqual(["SELECT 1"]);
  });
});
