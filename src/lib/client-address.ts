/**
 * The caller's address as a throttling key: `CF-Connecting-IP` (set by
 * Cloudflare's edge, which overwrites any client value). An IPv6 address counts
 * as its /64, since one subscriber usually holds a whole /64.
 */
export function clientAddress(request: Request): string {
  const ip = request.headers.get("cf-connecting-ip")?.trim() ?? "";
  if (ip === "") return "unknown";
  if (!ip.includes(":")) return ip;
  const groups = expandIpv6(ip);
  return groups ? `${groups.slice(0, 4).join(":")}::/64` : ip;
}

function expandIpv6(text: string): string[] | null {
  const halves = text.toLowerCase().split("::");
  if (halves.length > 2) return null;
  const part = (s: string | undefined) => (s ? s.split(":") : []);
  const left = part(halves[0]);
  const right = part(halves[1]);
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return null;
  const groups = [...left, ...new Array<string>(Math.max(0, missing)).fill("0"), ...right];
  if (!groups.slice(0, 4).every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => g.replace(/^0+(?=.)/, ""));
}
