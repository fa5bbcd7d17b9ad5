type Level = "debug" | "info" | "warn" | "error";
type Fields = Record<string, string | number | boolean | null | undefined>;

/** A thrown value as one log field: the error's class and message (anything else as text). */
export const errorText = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));

// Structured JSON lines: Workers Logs indexes the fields. Callers pass ids and
// outcomes only; secrets never reach this function.
export function log(level: Level, msg: string, fields: Fields = {}): void {
  const line = JSON.stringify({ level, msg, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}
