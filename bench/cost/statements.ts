/**
 * Splits a multi-statement SQL string into its statements. `SqlStorage.exec`
 * runs every statement of such a string but its cursor reports the rows of the
 * last one only, so the meter runs them one by one to count each. Quotes
 * ('…', "…", `…`, […]) and comments (-- …, /* … *\/) are skipped; a statement
 * is what lies between top-level semicolons. Triggers (BEGIN … END with inner
 * semicolons) are not used by this project and would be split wrongly.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  const closers: Record<string, string> = { "'": "'", '"': '"', "`": "`", "[": "]" };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c in closers) {
      const end = sql.indexOf(closers[c]!, i + 1);
      i = end === -1 ? sql.length : end + 1;
      continue;
    }
    if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? sql.length : end + 1;
      continue;
    }
    if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end === -1 ? sql.length : end + 2;
      continue;
    }
    if (c === ";") {
      out.push(sql.slice(start, i));
      start = i + 1;
    }
    i++;
  }
  out.push(sql.slice(start));
  return out.filter((s) => stripComments(s).trim() !== "");
}

const stripComments = (s: string): string => s.replace(/--[^\n]*/g, "").replace(/\/\*[\s\S]*?\*\//g, "");
