// A high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/**
 * The path (`text.body`, `items.2.name`) of the first string in a parsed JSON
 * value, key or value, that is ill-formed UTF-16 (a lone surrogate, which JSON's
 * `\uD800` escapes can carry and which no channel can deliver), or null.
 */
export function illFormedStringPath(value: unknown, path: string[] = []): string | null {
  if (typeof value === "string") return isWellFormed(value) ? null : path.join(".") || "(body)";
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = illFormedStringPath(item, [...path, String(i)]);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      // A bad key is named by the path of its object, with its well-formed part shown.
      if (!isWellFormed(key)) return [...path, `${key.replace(/[\uD800-\uDFFF]/g, "\uFFFD")} (field name)`].join(".");
      const found = illFormedStringPath(item, [...path, key]);
      if (found !== null) return found;
    }
  }
  return null;
}
