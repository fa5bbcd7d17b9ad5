/**
 * A failed webhook call, as the customer sees it in the delivery log: one of a
 * few categories with a fixed sentence, never the runtime's own message (which
 * can describe hosts and networks other than the customer's, and would turn
 * the delivery log into a network probe).
 */
export type NetworkErrorCategory = "dns" | "connect" | "tls" | "timeout" | "reset" | "network";

const SENTENCES: Record<NetworkErrorCategory, string> = {
  dns: "the host name could not be resolved.",
  connect: "no connection could be opened to the host.",
  tls: "the TLS handshake failed (certificate or protocol).",
  timeout: "no answer before the timeout.",
  reset: "the connection was closed before an answer arrived.",
  network: "the request could not be completed.",
};

// Ordered: the first match wins (a "TLS connection reset" is a TLS problem).
const PATTERNS: readonly [NetworkErrorCategory, RegExp][] = [
  ["timeout", /timed? ?out|timeout|ETIMEDOUT/i],
  ["dns", /dns|name (?:not|could not be) resolved|ENOTFOUND|EAI_AGAIN|getaddrinfo|no such host/i],
  ["tls", /tls|ssl|certificate|handshake/i],
  ["connect", /refused|ECONNREFUSED|unreachable|EHOSTUNREACH|ENETUNREACH|connect(?:ion)? (?:failed|error)/i],
  ["reset", /reset|ECONNRESET|connection lost|disconnected|hang up|EPIPE|closed/i],
];

export function categorizeNetworkError(err: unknown): NetworkErrorCategory {
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError") return "timeout";
  const text = err instanceof Error ? err.message : String(err);
  return PATTERNS.find(([, pattern]) => pattern.test(text))?.[0] ?? "network";
}

/** The delivery log's sentence for a category. */
export const describeNetworkError = (category: NetworkErrorCategory): string =>
  `Network error (${category}): ${SENTENCES[category]}`;
