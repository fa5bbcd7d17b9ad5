interface Route {
  path: string;
  method: string;
}

const patterns = new WeakMap<readonly Route[], { regex: RegExp; method: string }[]>();

// Hono path syntax to a regular expression: `:name` is one segment, `*` anything.
const toRegex = (path: string): RegExp =>
  new RegExp(
    `^${path
      .split("/")
      .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/")}$`,
  );

/**
 * The methods the app's routes answer on `path` (empty for an unknown path), for the
 * `Allow` header of a 405. Middleware (`ALL`) does not make a path known. HEAD is
 * answered wherever GET is.
 */
export function allowedMethods(routes: readonly Route[], path: string): string[] {
  let compiled = patterns.get(routes);
  if (!compiled) {
    compiled = routes.filter((r) => r.method !== "ALL").map((r) => ({ regex: toRegex(r.path), method: r.method }));
    patterns.set(routes, compiled);
  }
  const methods = new Set(compiled.filter((r) => r.regex.test(path)).map((r) => r.method));
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}
