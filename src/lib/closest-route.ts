interface Route {
  path: string;
  method: string;
}

/** Edit distance between two short strings (route segments), capped work: paths are short. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** A route's path against the requested one, segment by segment (`:name` matches any one segment). */
function pathDistance(route: string[], requested: string[]): number {
  if (route.length !== requested.length) return Number.POSITIVE_INFINITY;
  return route.reduce((sum, seg, i) => sum + (seg.startsWith(":") ? 0 : distance(seg, requested[i] ?? "")), 0);
}

/**
 * The route a mistyped path most likely meant ("/api/v1/mesages" → "GET, POST /api/v1/messages"),
 * for the 404's message; null when nothing is close. A typo is at most two edits, or a third
 * of the mistyped text, so that unrelated paths get no misleading suggestion.
 */
export function closestRoute(routes: readonly Route[], path: string): { path: string; methods: string[] } | null {
  const requested = path.split("/");
  let best: { path: string; cost: number } | null = null;
  for (const r of routes) {
    if (r.method === "ALL" || r.path.includes("*")) continue;
    const cost = pathDistance(r.path.split("/"), requested);
    if (cost > 0 && (best === null || cost < best.cost)) best = { path: r.path, cost };
  }
  if (!best) return null;
  const changed = requested.filter((seg, i) => seg !== best.path.split("/")[i]).join("").length;
  if (best.cost > Math.max(2, Math.floor(changed / 3))) return null;
  const methods = [
    ...new Set(routes.filter((r) => r.path === best.path && r.method !== "ALL").map((r) => r.method)),
  ].sort();
  return { path: best.path, methods };
}
