/**
 * Where a JSON text stops being JSON, for a 400 a client can act on: the runtime's
 * SyntaxError knows the character offset ("… at position 12") but not the line a person
 * looks at in an editor, so both are given. Null when the text parses.
 */
export interface JsonSyntaxError {
  /** 0-based offset in UTF-16 code units (what JSON.parse counts). */
  position: number | null;
  line: number | null;
  column: number | null;
  reason: string;
}

export function jsonSyntaxError(text: string): JsonSyntaxError | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const match = /position (\d+)/.exec(message);
    // An empty or truncated body ends early: point at its end.
    const position = match ? Number(match[1]) : /end of JSON|Unexpected end/i.test(message) ? text.length : null;
    // The runtime's own wording, without the offset we restate as line and column.
    const reason =
      message
        .replace(/\s*in JSON at position \d+.*$/s, "")
        .replace(/\s*\(line \d+ column \d+\)$/, "")
        .trim() || "Invalid JSON";
    if (position === null) return { position: null, line: null, column: null, reason };
    const before = text.slice(0, position);
    const line = before.split("\n").length;
    const column = position - (before.lastIndexOf("\n") + 1) + 1;
    return { position, line, column, reason };
  }
}
