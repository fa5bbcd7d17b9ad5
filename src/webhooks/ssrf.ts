import {
  checkWebhookUrlSyntax,
  describeNonPublicIp,
  displayAddress,
  isDevException,
  isIpLiteral,
  refuse,
  type SsrfOptions,
  type UrlCheck,
} from "../lib/url-safety";

/**
 * Server-side request forgery (SSRF) guard for customer webhook URLs: the syntax rules of
 * lib/url-safety.ts, then the host name is resolved over DNS-over-HTTPS and refused if ANY A/AAAA
 * answer is not globally routable (fail closed on every error). The delivery's own fetch resolves
 * the name once more (a Worker cannot pin the address it connects to), so a name whose answers
 * change between the check and the connection (DNS rebinding) is a residual risk; see
 * docs/security.md for why it is small on Cloudflare's egress. Deliveries never follow redirects.
 */

export {
  CLOUD_INTERNAL_BLOCKS,
  DENIED_PORTS,
  IPV4_BLOCK_LABELS,
  checkWebhookUrlSyntax,
  isPublicIp,
  type SsrfOptions,
  type UrlCheck,
} from "../lib/url-safety";

export interface DnsOptions extends SsrfOptions {
  /** DNS-over-HTTPS JSON endpoint, e.g. https://cloudflare-dns.com/dns-query (called as `${url}?name=<host>&type=A` and `type=AAAA` with header accept: application/dns-json). */
  dohResolverUrl: string;
}

const DNS_TIMEOUT_MS = 3000;

type DnsResult = { kind: "addresses"; addresses: string[] } | { kind: "nxdomain" } | { kind: "error"; reason: string };

const DNS_TYPE_A = 1;
const DNS_TYPE_AAAA = 28;
const DNS_STATUS_NOERROR = 0;
const DNS_STATUS_NXDOMAIN = 3;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

async function resolve(host: string, type: "A" | "AAAA", resolverUrl: string, signal: AbortSignal): Promise<DnsResult> {
  let query: URL;
  try {
    query = new URL(resolverUrl);
  } catch {
    return { kind: "error", reason: "The DNS resolver is misconfigured." };
  }
  query.searchParams.set("name", host);
  query.searchParams.set("type", type);

  let body: unknown;
  try {
    const res = await fetch(query.toString(), {
      method: "GET",
      headers: { accept: "application/dns-json" },
      signal,
    });
    if (!res.ok) {
      await res.body?.cancel();
      return { kind: "error", reason: `DNS resolution failed (resolver answered HTTP ${res.status}).` };
    }
    try {
      body = await res.json();
    } catch {
      return { kind: "error", reason: "DNS resolution failed (unreadable resolver answer)." };
    }
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    if (name === "TimeoutError" || name === "AbortError") {
      return { kind: "error", reason: "DNS resolution timed out." };
    }
    return { kind: "error", reason: "DNS resolution failed." };
  }

  if (!isRecord(body) || typeof body.Status !== "number") {
    return { kind: "error", reason: "DNS resolution failed (unreadable resolver answer)." };
  }
  if (body.Status === DNS_STATUS_NXDOMAIN) return { kind: "nxdomain" };
  if (body.Status !== DNS_STATUS_NOERROR) {
    return { kind: "error", reason: `DNS resolution failed (DNS status ${body.Status}).` };
  }
  const answers = body.Answer === undefined ? [] : body.Answer;
  if (!Array.isArray(answers)) {
    return { kind: "error", reason: "DNS resolution failed (unreadable resolver answer)." };
  }
  const addresses: string[] = [];
  for (const answer of answers) {
    if (!isRecord(answer)) {
      return { kind: "error", reason: "DNS resolution failed (unreadable resolver answer)." };
    }
    // CNAME (5) and anything else (DNSSEC records, ...) are ignored: the A/AAAA records at
    // the end of the chain are what a connection would use.
    if (answer.type !== DNS_TYPE_A && answer.type !== DNS_TYPE_AAAA) continue;
    if (typeof answer.data !== "string") {
      return { kind: "error", reason: "DNS resolution failed (unreadable resolver answer)." };
    }
    addresses.push(answer.data.trim());
  }
  return { kind: "addresses", addresses };
}

/** Syntax checks, then resolves the hostname over DoH and refuses it if ANY A/AAAA answer is not globally routable (or if resolution fails / returns no address). IP-literal hosts skip DNS. */
export async function checkWebhookUrl(raw: string, opts: DnsOptions): Promise<UrlCheck> {
  const syntax = checkWebhookUrlSyntax(raw, opts);
  if (!syntax.ok) return syntax;
  const { url } = syntax;
  if (isDevException(url, opts) || isIpLiteral(url.hostname)) return syntax;

  const host = url.hostname;
  const signal = AbortSignal.timeout(DNS_TIMEOUT_MS);
  const results = await Promise.all([
    resolve(host, "A", opts.dohResolverUrl, signal),
    resolve(host, "AAAA", opts.dohResolverUrl, signal),
  ]);

  const addresses: string[] = [];
  for (const result of results) {
    if (result.kind === "error") return refuse(`The host "${host}" could not be checked: ${result.reason}`);
    if (result.kind === "addresses") addresses.push(...result.addresses);
  }
  for (const address of addresses) {
    const why = describeNonPublicIp(address);
    if (why !== null) {
      return refuse(`The host resolves to a non-public address: ${displayAddress(address)} (${why}).`);
    }
  }
  if (addresses.length === 0) {
    const nx = results.every((r) => r.kind === "nxdomain");
    return refuse(
      nx ? `The host "${host}" does not exist (DNS NXDOMAIN).` : `The host "${host}" has no A or AAAA address.`,
    );
  }
  return syntax;
}
