import { parse as parseDomain } from "tldts";

/**
 * What a URL that we fetch on a customer's behalf may name, decided from its text alone: the
 * syntax half of the server-side request forgery (SSRF) guard (webhooks/ssrf.ts resolves the host
 * over DNS-over-HTTPS after this). On the ground floor because rules below the network's edge
 * (a template's media link) check URLs by the same rules.
 *
 * Pure module: no app imports, no bindings. checkWebhookUrlSyntax: everything that can be decided
 * from the URL text alone.
 *
 * Host normalisation is delegated to the WHATWG URL parser (`new URL(raw).hostname`), which
 * already turns every IPv4 spelling it accepts (decimal `2130706433`, octal `0177.0.0.1`,
 * hex `0x7f.1`, short `127.1`, percent-encoded or full-width digits, trailing dot) into
 * dotted-quad form, lower-cases and IDNA-encodes names, and compresses IPv6 literals (it
 * serialises `::ffff:127.0.0.1` as `::ffff:7f00:1`, so IPv6 is classified numerically, not
 * textually). It rejects IPv6 zone ids (`[fe80::1%25eth0]`), which we report as invalid.
 *
 * Decisions:
 *   - Ports: the default port (none, i.e. 443 for https), 443, 8443 and the ports from 1024 to
 *     65535 are allowed, except the well-known ports of internal services in that range
 *     (DENIED_PORTS: datastores, caches, search engines, message brokers, proxies, cluster and
 *     admin consoles). Every other port below 1024 (22 ssh, 25 smtp, 80 on https, ...) is refused.
 *     Webhook receivers listen on 443 almost always, and otherwise on 8443, 8080, 8000, 3000,
 *     5000, 8888 ...: none of those is denied.
 *   - Host names must end in a public suffix of the ICANN section of the Public Suffix List
 *     (`tldts`, which ships the list: no network at run time). Cluster-internal and
 *     private-network suffixes (`.svc`, `.corp`, `.lan`, `.cluster.local`, ...) are not ICANN
 *     suffixes and are refused whatever they resolve to; the special-use names of RFC 6761 and
 *     friends (LOCAL_SUFFIXES) stay refused by name even where the PSL lists them (`home.arpa`).
 *   - Addresses that look public but reach a cloud platform's own services (Azure's WireServer
 *     168.63.129.16, IBM Cloud's service network) are refused like private ranges (see
 *     IPV4_BLOCKS for the list and its sources).
 *   - Trailing dots: every host name ending in a dot is refused, including public ones like
 *     `example.com.`. A fully qualified trailing-dot name is a different string from the
 *     undotted one for TLS (SNI / certificate matching) and Host headers, and it is a classic
 *     way to slip past suffix deny-lists (`localhost.`, `foo.internal.`). Customers can simply
 *     drop the dot. (IPv4 literals such as `127.0.0.1.` lose the dot in the URL parser and are
 *     then refused as addresses.)
 *   - Transition IPv6 forms (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) are refused
 *     whatever IPv4 address they embed: no legitimate webhook endpoint needs them, and the
 *     embedded address is named in the reason to make the refusal understandable.
 *   - Local development (`allowInsecure`): `localhost` and `127.0.0.1` (any port, http or https)
 *     skip the scheme, port and private-address rules and are not resolved. Nothing else changes.
 */

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface SsrfOptions {
  /** true only in local development: then http://localhost and http://127.0.0.1 (any port) are allowed; nothing else changes. */
  allowInsecure: boolean;
}

const MAX_URL_LENGTH = 2048;
const MAX_HOSTNAME_LENGTH = 253;
const DEV_HOSTS: ReadonlySet<string> = new Set(["localhost", "127.0.0.1"]);

/**
 * Well-known ports of internal services within 1024–65535, refused even on public hosts: an
 * HTTP POST aimed at one of them is a cross-protocol attack on a datastore or an admin API,
 * never a webhook. Sources: IANA's service name and port registry and each product's docs.
 */
export const DENIED_PORTS: ReadonlyMap<number, string> = new Map([
  // Relational and document datastores
  [1433, "Microsoft SQL Server"],
  [1434, "Microsoft SQL Server browser"],
  [1521, "Oracle Database"],
  [2483, "Oracle Database"],
  [2484, "Oracle Database (TLS)"],
  [3306, "MySQL"],
  [33060, "MySQL X protocol"],
  [5432, "PostgreSQL"],
  [6432, "PgBouncer"],
  [5984, "CouchDB"],
  [26257, "CockroachDB"],
  [27017, "MongoDB"],
  [27018, "MongoDB"],
  [27019, "MongoDB"],
  [28015, "RethinkDB"],
  [50000, "IBM Db2"],
  [7000, "Cassandra"],
  [7001, "Cassandra (TLS)"],
  [9042, "Cassandra CQL"],
  [9160, "Cassandra Thrift"],
  [7474, "Neo4j"],
  [7687, "Neo4j Bolt"],
  [8086, "InfluxDB"],
  [8123, "ClickHouse HTTP"],
  [9000, "ClickHouse native / PHP-FPM / MinIO"],
  [9009, "ClickHouse replication"],
  // Caches and key-value stores, coordination services
  [6379, "Redis"],
  [6380, "Redis (TLS)"],
  [16379, "Redis cluster bus"],
  [26379, "Redis Sentinel"],
  [11211, "Memcached"],
  [2379, "etcd"],
  [2380, "etcd peers"],
  [2181, "ZooKeeper"],
  [2888, "ZooKeeper peers"],
  [3888, "ZooKeeper election"],
  [8300, "Consul"],
  [8301, "Consul"],
  [8302, "Consul"],
  [8500, "Consul HTTP API"],
  [8600, "Consul DNS"],
  // Search engines
  [9200, "Elasticsearch / OpenSearch"],
  [9300, "Elasticsearch transport"],
  [8983, "Solr"],
  // Message brokers
  [5671, "AMQP (TLS)"],
  [5672, "AMQP / RabbitMQ"],
  [15672, "RabbitMQ management"],
  [25672, "RabbitMQ clustering"],
  [4369, "Erlang port mapper"],
  [9092, "Kafka"],
  [9093, "Kafka (TLS) / Alertmanager"],
  [9094, "Kafka"],
  [4222, "NATS"],
  [6222, "NATS routing"],
  [8222, "NATS monitoring"],
  [61613, "STOMP"],
  [61614, "STOMP (TLS)"],
  [61616, "ActiveMQ"],
  [8161, "ActiveMQ console"],
  [1883, "MQTT"],
  [8883, "MQTT (TLS)"],
  [6650, "Pulsar"],
  // Proxies
  [1080, "SOCKS proxy"],
  [3128, "Squid proxy"],
  // Container, cluster and admin consoles
  [2375, "Docker API"],
  [2376, "Docker API (TLS)"],
  [2377, "Docker Swarm"],
  [6443, "Kubernetes API server"],
  [10250, "kubelet API"],
  [10255, "kubelet read-only API"],
  [10256, "kube-proxy health"],
  [10257, "kube-controller-manager"],
  [10259, "kube-scheduler"],
  [4646, "Nomad"],
  [8200, "Vault"],
  [8201, "Vault cluster"],
  [9090, "Prometheus"],
  [9100, "Prometheus node exporter"],
  [5601, "Kibana"],
  [9901, "Envoy admin"],
  [15000, "Envoy admin (Istio)"],
  [10000, "Webmin"],
  [11434, "Ollama"],
  // Remote access and file sharing
  [2049, "NFS"],
  [3260, "iSCSI"],
  [3389, "RDP"],
  [5900, "VNC"],
  [5901, "VNC"],
  [5985, "WinRM"],
  [5986, "WinRM (TLS)"],
]);

/** Ports below 1024 that are nevertheless allowed (see the module comment). */
const ALLOWED_LOW_PORTS: ReadonlySet<number> = new Set([443]);
const EXTRA_ALLOWED_PORTS: ReadonlySet<number> = new Set([8443]);

/**
 * Names that only make sense on a local or private network, and special-use names that never
 * resolve publicly (RFC 6761, RFC 6762, RFC 7686, RFC 8375, RFC 9476, ICANN `.internal`).
 * A host is refused if it equals one of these or is a subdomain of one.
 */
const LOCAL_SUFFIXES: readonly string[] = [
  "localhost",
  "local",
  "localdomain",
  "internal",
  "intranet",
  "lan",
  "home",
  "corp",
  "private",
  "home.arpa",
  "arpa",
  "test",
  "example",
  "invalid",
  "onion",
  "alt",
];

/** Cloud instance-metadata host names (they, and their subdomains, are refused). */
const METADATA_NAMES: readonly string[] = [
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.internal",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com",
  "metadata.packet.net",
];

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

export function refuse(reason: string): UrlCheck {
  return { ok: false, reason };
}

function isSameOrSubdomain(host: string, name: string): boolean {
  return host === name || host.endsWith(`.${name}`);
}

// ---------------------------------------------------------------------------------------------
// IP classification
// ---------------------------------------------------------------------------------------------

/** Parses strict dotted-decimal IPv4 (no leading zeros) into a 32-bit unsigned number. */
function parseIpv4(text: string): number | null {
  if (!DOTTED_QUAD.test(text)) return null;
  let value = 0;
  for (const part of text.split(".")) {
    if (part.length > 1 && part.startsWith("0")) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = value * 256 + n;
  }
  return value;
}

function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join(".");
}

/**
 * IPv4 ranges that are not globally routable unicast, with the label used in reasons. The first
 * match names the range, so the cloud-platform entries come first. Those look public but reach a
 * cloud provider's own services from inside its network:
 *   - 168.63.129.16/32: Azure WireServer (platform DNS, health probes, VM agent), reachable from
 *     every Azure VM. Source: Microsoft Learn, "What is IP address 168.63.129.16?".
 *   - 161.26.0.0/16: IBM Cloud service network (DNS, NTP, package mirrors, metadata).
 *     Source: IBM Cloud docs, "IBM Cloud IP ranges" (service network).
 *   - 166.8.0.0/14: IBM Cloud private service endpoints (cloud APIs over the private backbone).
 *     Source: IBM Cloud docs, "IBM Cloud IP ranges" (private service endpoints).
 * Other providers' metadata and internal services sit in ranges refused below: 169.254.169.254
 * (AWS, GCP, Azure IMDS, Oracle, DigitalOcean, Hetzner …), 169.254.0.23 (Tencent), 100.100.100.200
 * (Alibaba, carrier-grade NAT range), 192.0.0.192 (Oracle legacy, IETF protocol range), and in IPv6
 * fd00:ec2::254 (AWS) and fd20:ce::254 (GCP) (unique local).
 */
export const CLOUD_INTERNAL_BLOCKS: readonly (readonly [string, number, string])[] = [
  ["168.63.129.16", 32, "cloud platform internal: Azure WireServer"],
  ["161.26.0.0", 16, "cloud platform internal: IBM Cloud service network"],
  ["166.8.0.0", 14, "cloud platform internal: IBM Cloud private service endpoints"],
];

const IPV4_BLOCKS: readonly (readonly [string, number, string])[] = [
  ...CLOUD_INTERNAL_BLOCKS,
  ["0.0.0.0", 8, '"this" network'],
  ["10.0.0.0", 8, "private network"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private network"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay anycast"],
  ["192.168.0.0", 16, "private network"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
];

const IPV4_RANGES: readonly { base: number; mask: number; label: string }[] = IPV4_BLOCKS.map(([base, bits, label]) => {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return { base: (parseIpv4(base) ?? 0) & mask, mask, label };
});

/** Every label an IPv4 refusal can name (tests check each is exercised). */
export const IPV4_BLOCK_LABELS: readonly string[] = [...new Set(IPV4_BLOCKS.map(([, , label]) => label))];

function classifyIpv4(value: number): string | null {
  for (const range of IPV4_RANGES) {
    if ((value & range.mask) >>> 0 === range.base >>> 0) return range.label;
  }
  return null;
}

/**
 * Parses IPv6 text (RFC 4291 forms: full, `::`-compressed, optional dotted IPv4 tail) into
 * eight 16-bit groups. Zone ids and anything malformed give null.
 */
function parseIpv6(text: string): number[] | null {
  if (text.includes("%")) return null;
  let head = text;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (lastColon >= 0 && text.includes(".", lastColon)) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === null) return null;
    tail.push(v4 >>> 16, v4 & 0xffff);
    head = text.slice(0, lastColon + 1);
    // "::1.2.3.4" keeps "::"; "1::2:1.2.3.4" leaves a dangling ":" to drop.
    if (!head.endsWith("::")) head = head.slice(0, -1);
  }
  const parseGroups = (s: string): number[] | null => {
    if (s === "") return [];
    const groups: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      groups.push(parseInt(g, 16));
    }
    return groups;
  };
  const halves = head.split("::");
  let groups: number[];
  if (halves.length === 1) {
    const all = parseGroups(halves[0] ?? "");
    if (all === null) return null;
    groups = [...all, ...tail];
    if (groups.length !== 8) return null;
  } else if (halves.length === 2) {
    const left = parseGroups(halves[0] ?? "");
    const right = parseGroups(halves[1] ?? "");
    if (left === null || right === null) return null;
    const known = left.length + right.length + tail.length;
    if (known > 7) return null;
    groups = [...left, ...new Array<number>(8 - known).fill(0), ...right, ...tail];
  } else {
    return null;
  }
  return groups;
}

function ipv4FromGroups(high: number, low: number): string {
  return formatIpv4(((high << 16) >>> 0) + low);
}

function classifyIpv6(g: readonly number[]): string | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const embedded = ipv4FromGroups(g6, g7);
  const upperZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;

  if (upperZero && g5 === 0 && g6 === 0 && g7 === 0) return "unspecified";
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 1) return "loopback";
  if (upperZero && g5 === 0xffff) return `IPv4-mapped ${embedded}`;
  if (upperZero && g5 === 0) return `IPv4-compatible ${embedded}`;
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return `NAT64 ${embedded}`;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return "local-use NAT64";
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return "discard-only";
  if ((g0 & 0xfe00) === 0xfc00) return "unique local";
  if ((g0 & 0xffc0) === 0xfe80) return "link-local";
  if ((g0 & 0xffc0) === 0xfec0) return "site-local";
  if ((g0 & 0xff00) === 0xff00) return "multicast";
  // Everything else outside 2000::/3 is unassigned or reserved by IANA (e.g. 5f00::/16 SRv6).
  if ((g0 & 0xe000) !== 0x2000) return "reserved";
  if (g0 === 0x2001 && g1 === 0) return `Teredo ${ipv4FromGroups(g6 ^ 0xffff, g7 ^ 0xffff)}`;
  if (g0 === 0x2001 && g1 < 0x200) return "IETF protocol assignments";
  if (g0 === 0x2001 && g1 === 0xdb8) return "documentation";
  if (g0 === 0x2002) return `6to4 ${ipv4FromGroups(g1, g2)}`;
  if (g0 === 0x3fff && g1 < 0x1000) return "documentation";
  return null;
}

/**
 * Why an address is not globally routable unicast ("loopback", "private network",
 * "IPv4-mapped 127.0.0.1", ...), or null if it is public. Unparseable text is "invalid".
 */
export function describeNonPublicIp(address: string): string | null {
  let text = address.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (text.includes(":")) {
    const groups = parseIpv6(text);
    return groups === null ? "invalid address" : classifyIpv6(groups);
  }
  const v4 = parseIpv4(text);
  return v4 === null ? "invalid address" : classifyIpv4(v4);
}

/** Exported for reuse: true if the address (IPv4 dotted or IPv6 text as produced by the WHATWG URL parser, brackets stripped) is globally routable unicast. */
export function isPublicIp(address: string): boolean {
  return describeNonPublicIp(address) === null;
}

// ---------------------------------------------------------------------------------------------
// Syntax checks
// ---------------------------------------------------------------------------------------------

export function displayAddress(address: string): string {
  return address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
}

function checkPort(url: URL): string | null {
  if (url.port === "") return null; // scheme default
  const port = Number(url.port);
  const service = DENIED_PORTS.get(port);
  if (service !== undefined) {
    return `Port ${url.port} (${service}) is not allowed: it is a well-known internal service port, not a webhook receiver's.`;
  }
  if (ALLOWED_LOW_PORTS.has(port) || EXTRA_ALLOWED_PORTS.has(port) || (port >= 1024 && port <= 65535)) {
    return null;
  }
  return `Port ${url.port} is not allowed; use the default port, 443, 8443 or a port from 1024 to 65535 that is not a well-known internal service port.`;
}

function checkHostName(host: string): string | null {
  if (host.endsWith(".")) {
    return "Host names ending in a dot are not allowed; remove the trailing dot.";
  }
  if (host.length > MAX_HOSTNAME_LENGTH) return "The host name is too long.";
  const labels = host.split(".");
  if (!labels.every((label) => LABEL.test(label))) return "The host name is not a valid DNS name.";
  if (METADATA_NAMES.some((name) => isSameOrSubdomain(host, name))) {
    return `The host "${host}" is a cloud metadata endpoint.`;
  }
  if (LOCAL_SUFFIXES.some((suffix) => isSameOrSubdomain(host, suffix))) {
    return `The host "${host}" is a local, internal or special-use name.`;
  }
  if (labels.length < 2) {
    return `Single-label host names ("${host}") are not allowed; use a fully qualified public domain name.`;
  }
  const { publicSuffix, domain, isIcann } = parseDomain(host, { extractHostname: false, validateHostname: false });
  if (isIcann !== true) {
    return `The host "${host}" is not under a public top-level domain (".${publicSuffix ?? labels.at(-1)}" is not in the ICANN section of the Public Suffix List).`;
  }
  if (domain === null) return `The host "${host}" is a public suffix, not a domain name.`;
  return null;
}

/** True when the host is an IP literal as serialised by the URL parser. */
export function isIpLiteral(host: string): boolean {
  return (host.startsWith("[") && host.endsWith("]")) || DOTTED_QUAD.test(host);
}

export function isDevException(url: URL, opts: SsrfOptions): boolean {
  return opts.allowInsecure && DEV_HOSTS.has(url.hostname);
}

/** Syntax-only checks (no network). */
export function checkWebhookUrlSyntax(raw: string, opts: SsrfOptions): UrlCheck {
  if (typeof raw !== "string" || raw.trim() === "") return refuse("The URL is empty.");
  if (raw.length > MAX_URL_LENGTH) {
    return refuse(`The URL is too long (maximum ${MAX_URL_LENGTH} characters).`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("The URL is not a valid absolute URL.");
  }
  if (url.href.length > MAX_URL_LENGTH) {
    return refuse(`The URL is too long (maximum ${MAX_URL_LENGTH} characters).`);
  }

  const dev = isDevException(url, opts);
  if (url.protocol !== "https:" && !(dev && url.protocol === "http:")) {
    return refuse("The URL must use https.");
  }
  if (url.username !== "" || url.password !== "") {
    return refuse("Userinfo (user:pass@) is not allowed in webhook URLs.");
  }
  if (dev) return { ok: true, url };

  const portProblem = checkPort(url);
  if (portProblem !== null) return refuse(portProblem);

  const host = url.hostname;
  if (host === "") return refuse("The URL has no host.");
  if (isIpLiteral(host)) {
    const why = describeNonPublicIp(host);
    if (why !== null) {
      return refuse(`The host is a non-public address: ${displayAddress(host)} (${why}).`);
    }
    return { ok: true, url };
  }
  const nameProblem = checkHostName(host);
  if (nameProblem !== null) return refuse(nameProblem);
  return { ok: true, url };
}

// ---------------------------------------------------------------------------------------------
// DNS checks
// ---------------------------------------------------------------------------------------------
