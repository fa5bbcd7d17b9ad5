import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from "vitest";
import {
  DENIED_PORTS,
  IPV4_BLOCK_LABELS,
  checkWebhookUrl,
  checkWebhookUrlSyntax,
  isPublicIp,
} from "../../../src/webhooks/ssrf";
import { answerAtEdge, type EdgeAnswer } from "../../helpers/edge";

const PROD = { allowInsecure: false };
const DEV = { allowInsecure: true };
const RESOLVER = "https://doh.test-resolver.example/dns-query";
const DNS = { allowInsecure: false, dohResolverUrl: RESOLVER };

function expectRefused(raw: string, opts = PROD, reason?: RegExp): string {
  const result = checkWebhookUrlSyntax(raw, opts);
  if (result.ok) throw new Error(`expected ${JSON.stringify(raw)} to be refused, got ${result.url.href}`);
  expect(result.reason).toMatch(/\.$/);
  if (reason) expect(result.reason).toMatch(reason);
  return result.reason;
}

describe("checkWebhookUrlSyntax: refused", () => {
  // [raw URL, what the reason must mention]
  const refused: [string, RegExp][] = [
    // Scheme
    ["http://example.com/hook", /must use https/],
    ["ftp://example.com/hook", /must use https/],
    ["ws://example.com/hook", /must use https/],
    ["wss://example.com/hook", /must use https/],
    ["file:///etc/passwd", /must use https/],
    ["gopher://example.com:70/_", /must use https/],
    ["javascript:alert(1)", /must use https/],
    ["data:text/plain,hi", /must use https/],
    ["http://localhost:3000/x", /must use https/],
    ["http://127.0.0.1:9000", /must use https/],
    // Not a URL / too long
    ["", /empty/],
    ["   ", /empty/],
    ["example.com/hook", /not a valid absolute URL/],
    ["/relative/path", /not a valid absolute URL/],
    ["https://", /not a valid absolute URL/],
    ["https://exa mple.com/", /not a valid absolute URL/],
    ["https://example.com:99999/", /not a valid absolute URL/],
    ["https://foo.0x7f/", /not a valid absolute URL/],
    ["https://1.2.3.4.5/", /not a valid absolute URL/],
    ["https://4294967296/", /not a valid absolute URL/],
    [`https://example.com/${"a".repeat(2049)}`, /too long/],
    // Userinfo
    ["https://user:pass@example.com/hook", /Userinfo/],
    ["https://user@example.com/hook", /Userinfo/],
    ["https://:secret@example.com/hook", /Userinfo/],
    ["https://example.com@127.0.0.1/", /Userinfo/],
    // Ports
    ["https://example.com:22/", /Port 22 /],
    ["https://example.com:25/", /Port 25 /],
    ["https://example.com:80/", /Port 80 /],
    ["https://example.com:0/", /Port 0 /],
    ["https://example.com:1/", /Port 1 /],
    ["https://example.com:1023/", /Port 1023 /],
    // Well-known internal service ports above 1023
    ["https://example.com:6379/", /Port 6379 \(Redis\)/],
    ["https://example.com:5432/", /Port 5432 \(PostgreSQL\)/],
    ["https://example.com:3306/", /Port 3306 \(MySQL\)/],
    ["https://example.com:27017/", /Port 27017 \(MongoDB\)/],
    ["https://example.com:11211/", /Port 11211 \(Memcached\)/],
    ["https://example.com:9200/", /Port 9200 \(Elasticsearch/],
    ["https://example.com:5672/", /Port 5672 \(AMQP/],
    ["https://example.com:9092/", /Port 9092 \(Kafka\)/],
    ["https://example.com:2375/", /Port 2375 \(Docker API\)/],
    ["https://example.com:6443/", /Port 6443 \(Kubernetes API server\)/],
    ["https://example.com:10250/", /Port 10250 \(kubelet API\)/],
    ["https://example.com:8500/", /Port 8500 \(Consul HTTP API\)/],
    ["https://example.com:2379/", /Port 2379 \(etcd\)/],
    ["https://example.com:15672/", /Port 15672 \(RabbitMQ management\)/],
    ["https://93.184.216.34:6379/", /Port 6379 \(Redis\)/],
    // Addresses that look public but reach a cloud platform's own services
    ["https://168.63.129.16/", /168\.63\.129\.16 \(cloud platform internal: Azure WireServer\)/],
    ["https://2822734096/", /168\.63\.129\.16 \(cloud platform internal: Azure WireServer\)/],
    ["https://161.26.0.10/", /cloud platform internal: IBM Cloud service network/],
    ["https://166.9.1.1/", /cloud platform internal: IBM Cloud private service endpoints/],
    ["https://[::ffff:168.63.129.16]/", /IPv4-mapped 168\.63\.129\.16/],
    // IPv4 literals (every spelling normalises to dotted quad)
    ["https://127.0.0.1/", /127\.0\.0\.1 \(loopback\)/],
    ["https://127.0.0.1:8443/", /127\.0\.0\.1 \(loopback\)/],
    ["https://127.0.0.1./", /127\.0\.0\.1 \(loopback\)/],
    ["https://127.1/", /127\.0\.0\.1 \(loopback\)/],
    ["https://2130706433/", /127\.0\.0\.1 \(loopback\)/],
    ["https://0177.0.0.1/", /127\.0\.0\.1 \(loopback\)/],
    ["https://0x7f.1/", /127\.0\.0\.1 \(loopback\)/],
    ["https://0x7f000001/", /127\.0\.0\.1 \(loopback\)/],
    ["https://017700000001/", /127\.0\.0\.1 \(loopback\)/],
    ["https://%31%32%37.0.0.1/", /127\.0\.0\.1 \(loopback\)/],
    ["https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", /127\.0\.0\.1 \(loopback\)/],
    ["https://127.255.255.254/", /loopback/],
    ["https://0/", /0\.0\.0\.0/],
    ["https://0.0.0.0/", /0\.0\.0\.0/],
    ["https://0.1.2.3/", /this/],
    ["https://10.1/", /10\.0\.0\.1 \(private network\)/],
    ["https://10.0.0.5/", /10\.0\.0\.5 \(private network\)/],
    ["https://0x0a000001/", /10\.0\.0\.1 \(private network\)/],
    ["https://10.255.255.255/", /private network/],
    ["https://100.64.0.1/", /carrier-grade NAT/],
    ["https://100.127.255.254/", /carrier-grade NAT/],
    ["https://100.100.100.200/", /carrier-grade NAT/],
    ["https://169.254.169.254/latest/meta-data/", /169\.254\.169\.254 \(link-local\)/],
    ["https://0xa9fea9fe/", /169\.254\.169\.254 \(link-local\)/],
    ["https://2852039166/", /169\.254\.169\.254 \(link-local\)/],
    ["https://172.16.0.1/", /private network/],
    ["https://172.31.255.255/", /private network/],
    ["https://192.0.0.8/", /IETF protocol/],
    ["https://192.0.2.1/", /documentation/],
    ["https://192.88.99.1/", /6to4 relay/],
    ["https://192.168.1.1/", /private network/],
    ["https://0300.0250.0.1/", /192\.168\.0\.1/],
    ["https://198.18.0.1/", /benchmarking/],
    ["https://198.19.255.255/", /benchmarking/],
    ["https://198.51.100.7/", /documentation/],
    ["https://203.0.113.9/", /documentation/],
    ["https://224.0.0.1/", /multicast/],
    ["https://239.255.255.250/", /multicast/],
    ["https://240.0.0.1/", /reserved/],
    ["https://255.255.255.255/", /broadcast/],
    ["https://4294967295/", /broadcast/],
    // IPv6 literals
    ["https://[::1]/", /::1 \(loopback\)/],
    ["https://[0:0:0:0:0:0:0:1]:8443/", /loopback/],
    ["https://[::]/", /unspecified/],
    ["https://[::ffff:127.0.0.1]/", /IPv4-mapped 127\.0\.0\.1/],
    ["https://[::ffff:7f00:1]/", /IPv4-mapped 127\.0\.0\.1/],
    ["https://[::ffff:a9fe:a9fe]/", /IPv4-mapped 169\.254\.169\.254/],
    ["https://[::ffff:10.0.0.1]/", /IPv4-mapped 10\.0\.0\.1/],
    ["https://[::ffff:93.184.216.34]/", /IPv4-mapped 93\.184\.216\.34/],
    ["https://[::127.0.0.1]/", /IPv4-compatible 127\.0\.0\.1/],
    ["https://[::10.0.0.1]/", /IPv4-compatible 10\.0\.0\.1/],
    ["https://[::ffff:0:10.0.0.1]/", /reserved/],
    ["https://[64:ff9b::10.0.0.1]/", /NAT64 10\.0\.0\.1/],
    ["https://[64:ff9b::7f00:1]/", /NAT64 127\.0\.0\.1/],
    ["https://[64:ff9b:1::a00:1]/", /local-use NAT64/],
    ["https://[2002:a00:1::1]/", /6to4 10\.0\.0\.1/],
    ["https://[2002:7f00:1::]/", /6to4 127\.0\.0\.1/],
    ["https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", /Teredo 10\.0\.0\.1/],
    ["https://[2001::1]/", /Teredo/],
    ["https://[2001:2::1]/", /IETF protocol/],
    ["https://[fe80::1]/", /link-local/],
    ["https://[fe80::1%25eth0]/", /not a valid absolute URL/],
    ["https://[fe80::1%eth0]/", /not a valid absolute URL/],
    ["https://[febf:ffff::1]/", /link-local/],
    ["https://[fec0::1]/", /site-local/],
    ["https://[fc00::1]/", /unique local/],
    ["https://[fd00:ec2::254]/", /unique local/],
    ["https://[fdff:ffff::1]/", /unique local/],
    ["https://[ff02::1]/", /multicast/],
    ["https://[ff05::1:3]/", /multicast/],
    ["https://[2001:db8::1]/", /documentation/],
    ["https://[2001:db8:ffff::1]:8443/", /documentation/],
    ["https://[3fff::1]/", /documentation/],
    ["https://[100::1]/", /discard-only/],
    ["https://[5f00::1]/", /reserved/],
    ["https://[4000::1]/", /reserved/],
    // Names
    ["https://localhost/", /local/],
    ["https://LOCALHOST:8443/", /local/],
    ["https://localhost./", /trailing dot/],
    ["https://api.localhost/", /local/],
    ["https://foo.internal/", /local/],
    ["https://foo.internal./", /trailing dot/],
    ["https://service.namespace.svc.cluster.local/", /local/],
    ["https://printer.local/", /local/],
    ["https://router.localdomain/", /local/],
    ["https://nas.home.arpa/", /local/],
    ["https://1.0.0.127.in-addr.arpa/", /local/],
    ["https://foo.test/", /special-use/],
    ["https://foo.example/", /special-use/],
    ["https://foo.invalid/", /special-use/],
    ["https://abcdefghij.onion/", /special-use/],
    ["https://metadata/", /cloud metadata/],
    ["https://metadata.google.internal/computeMetadata/v1/", /cloud metadata/],
    ["https://METADATA.GOOGLE.INTERNAL./", /trailing dot/],
    ["https://metadata.goog/", /cloud metadata/],
    ["https://instance-data/", /cloud metadata/],
    ["https://instance-data.ec2.internal/", /cloud metadata/],
    ["https://metadata.tencentyun.com/", /cloud metadata/],
    ["https://intranet/", /local/],
    // Suffixes outside the ICANN section of the Public Suffix List
    ["https://api.default.svc/", /"\.svc" is not in the ICANN section/],
    ["https://vault.service.consul/", /"\.consul" is not in the ICANN section/],
    ["https://db.k8s/", /"\.k8s" is not in the ICANN section/],
    ["https://router.domain/", /"\.domain" is not in the ICANN section/],
    ["https://printer.workgroup/", /"\.workgroup" is not in the ICANN section/],
    ["https://app.docker/", /"\.docker" is not in the ICANN section/],
    ["https://git.intern/", /"\.intern" is not in the ICANN section/],
    ["https://api.cluster/", /"\.cluster" is not in the ICANN section/],
    ["https://co.uk/", /is a public suffix, not a domain name/],
    ["https://server/", /Single-label/],
    ["https://kubernetes/", /Single-label/],
    ["https://example.com./", /trailing dot/],
    ["https://example\u3002com\u3002/", /trailing dot/],
    ["https://a..example.com/", /not a valid DNS name/],
    ["https://\u3002example.com/", /not a valid DNS name/],
    ["https://-bad.example.com/", /not a valid DNS name/],
    [`https://${"a".repeat(64)}.example.com/`, /not a valid DNS name/],
    [`https://${"abcdefghi.".repeat(26)}com/`, /too long/],
  ];

  it("exercises every non-public IPv4 range the module knows", () => {
    // A range added to the module without a refused case here fails this test.
    const reasons = refused.map(([raw]) => checkWebhookUrlSyntax(raw, PROD)).flatMap((r) => (r.ok ? [] : [r.reason]));
    const missing = IPV4_BLOCK_LABELS.filter((label) => !reasons.some((reason) => reason.includes(`(${label})`)));
    expect(missing).toEqual([]);
  });

  it.each(refused)("refuses %s", (raw, reason) => {
    expectRefused(raw, PROD, reason);
  });

  it("names the scheme requirement first, even with other problems", () => {
    expect(expectRefused("http://user:pass@10.0.0.1:22/")).toBe("The URL must use https.");
  });

  it("refuses a non-string at runtime instead of throwing", () => {
    expect(checkWebhookUrlSyntax(undefined as unknown as string, PROD).ok).toBe(false);
  });
});

describe("checkWebhookUrlSyntax: accepted", () => {
  const accepted: [string, string][] = [
    ["https://example.com/hook", "https://example.com/hook"],
    ["https://example.com", "https://example.com/"],
    ["https://hooks.example.co.uk:8443/a?b=c", "https://hooks.example.co.uk:8443/a?b=c"],
    ["https://example.com:443/x", "https://example.com/x"],
    ["https://example.com:1024/x", "https://example.com:1024/x"],
    ["https://example.com:65535/x", "https://example.com:65535/x"],
    // Ports webhook receivers use stay open.
    ["https://example.com:8080/x", "https://example.com:8080/x"],
    ["https://example.com:8000/x", "https://example.com:8000/x"],
    ["https://example.com:3000/x", "https://example.com:3000/x"],
    ["https://example.com:5000/x", "https://example.com:5000/x"],
    ["https://example.com:8888/x", "https://example.com:8888/x"],
    ["https://example.com:9443/x", "https://example.com:9443/x"],
    // ICANN suffixes, including new and IDN ones, and names under private PSL suffixes.
    ["https://hooks.example.company/", "https://hooks.example.company/"],
    ["https://nas.fritz.box/", "https://nas.fritz.box/"],
    ["https://a.example.int/", "https://a.example.int/"],
    ["https://shop.xn--fiqs8s/", "https://shop.xn--fiqs8s/"],
    ["https://abc.ngrok.io/in", "https://abc.ngrok.io/in"],
    ["https://hooks.my-worker.workers.dev/", "https://hooks.my-worker.workers.dev/"],
    // Public addresses next to the cloud-internal ones.
    ["https://168.63.129.17/", "https://168.63.129.17/"],
    ["https://166.12.0.1/", "https://166.12.0.1/"],
    ["https://93.184.216.34/x", "https://93.184.216.34/x"],
    ["https://1.1.1.1/", "https://1.1.1.1/"],
    ["https://8.8.8.8:8443/", "https://8.8.8.8:8443/"],
    ["https://172.32.0.1/", "https://172.32.0.1/"],
    ["https://100.128.0.1/", "https://100.128.0.1/"],
    ["https://[2606:4700::1111]/", "https://[2606:4700::1111]/"],
    ["https://[2a00:1450:4001:80b::200e]:8443/in", "https://[2a00:1450:4001:80b::200e]:8443/in"],
    ["https://api.customer.io/webhooks", "https://api.customer.io/webhooks"],
    ["HTTPS://API.Example.COM/Path?Q=1#frag", "https://api.example.com/Path?Q=1#frag"],
    ["https://b\u00fccher.de/hook", "https://xn--bcher-kva.de/hook"],
    ["https://\u4f8b\u3048.jp/hook", "https://xn--r8jz45g.jp/hook"],
    ["https://my_service.example.com/", "https://my_service.example.com/"],
    ["https://localhost.example.com/", "https://localhost.example.com/"],
    ["https://internal.example.com/", "https://internal.example.com/"],
    ["https://127.0.0.1.nip.io/", "https://127.0.0.1.nip.io/"],
    ["https://@example.com/", "https://example.com/"],
    ["  https://example.com/trimmed  ", "https://example.com/trimmed"],
    [`https://example.com/${"a".repeat(2028 - 1)}`, `https://example.com/${"a".repeat(2027)}`],
  ];

  it.each(accepted)("accepts %s", (raw, href) => {
    const result = checkWebhookUrlSyntax(raw, PROD);
    if (!result.ok) throw new Error(`expected ${raw} to be accepted: ${result.reason}`);
    expect(result.url.href).toBe(href);
    expect(result.url).toBeInstanceOf(URL);
  });

  it("accepts exactly 2048 characters and refuses 2049", () => {
    const base = "https://example.com/";
    expect(checkWebhookUrlSyntax(base + "a".repeat(2048 - base.length), PROD).ok).toBe(true);
    expectRefused(base + "a".repeat(2049 - base.length), PROD, /too long/);
  });
});

describe("checkWebhookUrlSyntax: allowInsecure (local development)", () => {
  it.each([
    ["http://localhost:3000/x", "http://localhost:3000/x"],
    ["http://127.0.0.1:9000", "http://127.0.0.1:9000/"],
    ["http://localhost/", "http://localhost/"],
    ["http://localhost:80/", "http://localhost/"],
    ["http://127.0.0.1:22/", "http://127.0.0.1:22/"],
    ["https://localhost:8443/", "https://localhost:8443/"],
  ])("accepts %s", (raw, href) => {
    const result = checkWebhookUrlSyntax(raw, DEV);
    if (!result.ok) throw new Error(`expected ${raw} to be accepted: ${result.reason}`);
    expect(result.url.href).toBe(href);
  });

  it.each([
    ["http://example.com/", /must use https/],
    ["http://10.0.0.1/", /must use https/],
    ["http://127.0.0.2/", /must use https/],
    ["http://[::1]:3000/", /must use https/],
    ["http://api.localhost:3000/", /must use https/],
    ["http://localhost.:3000/", /must use https/],
    ["ftp://localhost/", /must use https/],
    ["ws://localhost:3000/", /must use https/],
    ["http://user:pass@localhost:3000/", /Userinfo/],
    ["https://10.0.0.1/", /private network/],
    ["https://192.168.1.1/", /private network/],
    ["https://[::1]/", /loopback/],
    ["https://api.localhost/", /local/],
  ])("still refuses %s", (raw, reason) => {
    expectRefused(raw, DEV, reason);
  });

  it("refuses both localhost forms when off", () => {
    expectRefused("http://localhost:3000/x", PROD, /must use https/);
    expectRefused("http://127.0.0.1:9000", PROD, /must use https/);
    expectRefused("https://localhost:3000/x", PROD, /local/);
    expectRefused("https://127.0.0.1:9443", PROD, /loopback/);
  });
});

describe("DENIED_PORTS", () => {
  it("are all within 1024–65535 and none is a port webhook receivers commonly use", () => {
    for (const port of DENIED_PORTS.keys()) expect(port >= 1024 && port <= 65535, String(port)).toBe(true);
    for (const port of [8443, 8080, 8000, 3000, 5000, 8888, 4443, 9443])
      expect(DENIED_PORTS.has(port), String(port)).toBe(false);
  });

  it.each([...DENIED_PORTS.keys()])("refuses port %i with its service named", (port) => {
    expectRefused(`https://hooks.example.com:${port}/`, PROD, new RegExp(`^Port ${port} \\(`));
  });
});

describe("isPublicIp", () => {
  it.each([
    "93.184.216.34",
    "1.1.1.1",
    "8.8.8.8",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.255",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2606:4700:4700::1001",
    "2a00:1450:4001:80b::200e",
    "2001:200::1",
    "2001:4860:4860::8888",
    "2620:4f:8000::1",
    "3fff:1000::1",
    "[2606:4700::1111]",
    "2606:4700:0:0:0:0:0:1111",
    "2606:4700::1.1.1.1",
  ])("%s is public", (address) => {
    expect(isPublicIp(address)).toBe(true);
  });

  it.each([
    "0.0.0.0",
    "10.0.0.1",
    "100.64.0.0",
    "127.0.0.1",
    "169.254.169.254",
    "172.16.0.1",
    "192.0.0.1",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.0.1",
    "198.18.0.0",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "[::1]",
    "::ffff:7f00:1",
    "168.63.129.16",
    "161.26.1.1",
    "166.11.255.255",
    "::ffff:127.0.0.1",
    "::ffff:93.184.216.34",
    "::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b:1::1",
    "2002:a00:1::",
    "2001::1",
    "2001:db8::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "ff02::1",
    "100::1",
    // Malformed input fails closed.
    "",
    "not-an-ip",
    "127.1",
    "2130706433",
    "010.0.0.1",
    "256.0.0.1",
    "1.2.3",
    "1:2:3:4:5:6:7",
    "1:2:3:4:5:6:7:8:9",
    "1::2::3",
    "12345::1",
    "2606:4700::1.1.1",
    "example.com",
  ])("%s is not public", (address) => {
    expect(isPublicIp(address)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// DNS over HTTPS, mocked at the network edge.
// ---------------------------------------------------------------------------------------------

type DohAnswer = { name: string; type: number; TTL: number; data: string };
type Zone = Record<
  string,
  { A?: DohAnswer[]; AAAA?: DohAnswer[]; status?: number } | "http500" | "network-error" | "timeout" | "garbage"
>;

const a = (name: string, data: string): DohAnswer => ({ name, type: 1, TTL: 300, data });
const aaaa = (name: string, data: string): DohAnswer => ({ name, type: 28, TTL: 300, data });
const cname = (name: string, data: string): DohAnswer => ({ name, type: 5, TTL: 300, data });

const ZONE: Zone = {
  "public.example.com": {
    A: [a("public.example.com", "93.184.216.34")],
    AAAA: [aaaa("public.example.com", "2606:2800:220:1:248:1893:25c8:1946")],
  },
  "mixed.example.com": {
    A: [a("mixed.example.com", "93.184.216.34"), a("mixed.example.com", "10.0.0.5"), a("mixed.example.com", "1.1.1.1")],
    AAAA: [aaaa("mixed.example.com", "2606:4700::1111")],
  },
  "v6private.example.com": { A: [], AAAA: [aaaa("v6private.example.com", "fd00::1")] },
  "v6mapped.example.com": { AAAA: [aaaa("v6mapped.example.com", "::ffff:127.0.0.1")] },
  "v6only.example.com": { AAAA: [aaaa("v6only.example.com", "2606:4700::1111")] },
  "v4only.example.com": { A: [a("v4only.example.com", "1.1.1.1")] },
  "chain.example.com": {
    A: [
      cname("chain.example.com", "cdn.example.net."),
      cname("cdn.example.net.", "edge.example.org."),
      a("edge.example.org.", "104.16.0.1"),
    ],
    AAAA: [
      cname("chain.example.com", "cdn.example.net."),
      cname("cdn.example.net.", "edge.example.org."),
      aaaa("edge.example.org.", "2606:4700::6810:1"),
    ],
  },
  "chain-private.example.com": {
    A: [cname("chain-private.example.com", "internal.example.net."), a("internal.example.net.", "169.254.169.254")],
    AAAA: [cname("chain-private.example.com", "internal.example.net.")],
  },
  "cname-only.example.com": { A: [cname("cname-only.example.com", "gone.example.net.")], AAAA: [] },
  "empty.example.com": { A: [], AAAA: [] },
  "nx.example.com": { status: 3 },
  "servfail.example.com": { status: 2 },
  "down.example.com": "http500",
  "unreachable.example.com": "network-error",
  "slow.example.com": "timeout",
  "garbage.example.com": "garbage",
  "rebind.example.com": { A: [a("rebind.example.com", "127.0.0.1")] },
  "bogus-data.example.com": { A: [a("bogus-data.example.com", "not-an-address")] },
  "azure-wire.example.com": { A: [a("azure-wire.example.com", "168.63.129.16")] },
};

describe("checkWebhookUrl (DNS over HTTPS)", () => {
  let unexpected: string[];
  let requests: { name: string; type: string }[];
  let fetchSpy: Mock<EdgeAnswer>;
  let removeResolver: () => void;

  beforeEach(() => {
    unexpected = [];
    requests = [];
    fetchSpy = vi.fn<EdgeAnswer>(async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      const name = url.searchParams.get("name") ?? "";
      const type = url.searchParams.get("type") ?? "";
      const entry = ZONE[name];
      if (
        `${url.origin}${url.pathname}` !== RESOLVER ||
        request.method !== "GET" ||
        request.headers.get("accept") !== "application/dns-json" ||
        !(init?.signal instanceof AbortSignal) ||
        (type !== "A" && type !== "AAAA") ||
        entry === undefined
      ) {
        unexpected.push(`${request.method} ${request.url}`);
        throw new Error(`unexpected fetch: ${request.method} ${request.url}`);
      }
      requests.push({ name, type });
      if (entry === "http500") return new Response("oops", { status: 500 });
      if (entry === "network-error") throw new TypeError("Network connection lost.");
      if (entry === "timeout") throw new DOMException("The operation was aborted due to timeout", "TimeoutError");
      if (entry === "garbage") return new Response("<html>not json</html>", { status: 200 });
      const answer = type === "A" ? entry.A : entry.AAAA;
      const body = {
        Status: entry.status ?? 0,
        TC: false,
        RD: true,
        RA: true,
        AD: false,
        CD: false,
        Question: [{ name, type: type === "A" ? 1 : 28 }],
        ...(answer && answer.length > 0 ? { Answer: answer } : {}),
      };
      return Response.json(body, { headers: { "content-type": "application/dns-json" } });
    });
    removeResolver = answerAtEdge(fetchSpy);
  });

  afterEach(() => {
    removeResolver();
    // Any request the fake resolver did not expect fails the test that made it.
    expect(unexpected).toEqual([]);
  });

  async function refused(raw: string, opts = DNS): Promise<string> {
    const result = await checkWebhookUrl(raw, opts);
    if (result.ok) throw new Error(`expected ${raw} to be refused`);
    return result.reason;
  }

  it("accepts a host whose A and AAAA answers are all public, asking for both types", async () => {
    const result = await checkWebhookUrl("https://public.example.com/hook?x=1", DNS);
    expect(result).toEqual({ ok: true, url: new URL("https://public.example.com/hook?x=1") });
    expect(requests).toEqual(
      expect.arrayContaining([
        { name: "public.example.com", type: "A" },
        { name: "public.example.com", type: "AAAA" },
      ]),
    );
    expect(requests).toHaveLength(2);
  });

  it("calls the resolver as `${url}?name=<host>&type=...` with the DoH JSON accept header", async () => {
    await checkWebhookUrl("https://public.example.com/", DNS);
    const urls = fetchSpy.mock.calls.map(([input]) => (input instanceof Request ? input.url : String(input)));
    expect(urls.sort()).toEqual([
      `${RESOLVER}?name=public.example.com&type=A`,
      `${RESOLVER}?name=public.example.com&type=AAAA`,
    ]);
  });

  it("refuses when one A answer among public ones is private, naming the address", async () => {
    expect(await refused("https://mixed.example.com/hook")).toBe(
      "The host resolves to a non-public address: 10.0.0.5 (private network).",
    );
  });

  it("refuses a private AAAA-only host", async () => {
    expect(await refused("https://v6private.example.com/")).toMatch(/fd00::1 \(unique local\)/);
  });

  it("refuses an IPv4-mapped loopback AAAA answer", async () => {
    expect(await refused("https://v6mapped.example.com/")).toMatch(/IPv4-mapped 127\.0\.0\.1/);
  });

  it("refuses a public name pointing at loopback (DNS rebinding style)", async () => {
    expect(await refused("https://rebind.example.com/")).toMatch(/127\.0\.0\.1 \(loopback\)/);
  });

  it("accepts IPv6-only and IPv4-only public hosts", async () => {
    expect((await checkWebhookUrl("https://v6only.example.com/", DNS)).ok).toBe(true);
    expect((await checkWebhookUrl("https://v4only.example.com/", DNS)).ok).toBe(true);
  });

  it("follows a CNAME chain that ends in public addresses", async () => {
    expect((await checkWebhookUrl("https://chain.example.com/hook", DNS)).ok).toBe(true);
  });

  it("refuses a public name that resolves to Azure's WireServer", async () => {
    expect(await refused("https://azure-wire.example.com/")).toMatch(
      /168\.63\.129\.16 \(cloud platform internal: Azure WireServer\)/,
    );
  });

  it("refuses a non-ICANN suffix without resolving it", async () => {
    expect(await refused("https://orders.default.svc/")).toMatch(/ICANN/);
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it("refuses the CNAME chain that ends in the metadata address", async () => {
    expect(await refused("https://chain-private.example.com/")).toMatch(/169\.254\.169\.254 \(link-local\)/);
  });

  it("refuses a CNAME without any address record", async () => {
    expect(await refused("https://cname-only.example.com/")).toMatch(/no A or AAAA address/);
  });

  it("refuses an empty answer", async () => {
    expect(await refused("https://empty.example.com/")).toBe('The host "empty.example.com" has no A or AAAA address.');
  });

  it("refuses NXDOMAIN", async () => {
    expect(await refused("https://nx.example.com/")).toBe('The host "nx.example.com" does not exist (DNS NXDOMAIN).');
  });

  it("fails closed on SERVFAIL", async () => {
    expect(await refused("https://servfail.example.com/")).toMatch(/could not be checked: .*status 2/);
  });

  it("fails closed on a resolver HTTP 500", async () => {
    expect(await refused("https://down.example.com/")).toMatch(/could not be checked: .*HTTP 500/);
  });

  it("fails closed on a network error", async () => {
    expect(await refused("https://unreachable.example.com/")).toMatch(/could not be checked: DNS resolution failed\./);
  });

  it("fails closed on a timeout", async () => {
    expect(await refused("https://slow.example.com/")).toMatch(/timed out/);
  });

  it("fails closed on a non-JSON resolver answer", async () => {
    expect(await refused("https://garbage.example.com/")).toMatch(/unreadable resolver answer/);
  });

  it("fails closed on an A record whose data is not an address", async () => {
    expect(await refused("https://bogus-data.example.com/")).toMatch(/not-an-address \(invalid address\)/);
  });

  it("fails closed when the resolver URL is misconfigured, without fetching", async () => {
    expect(await refused("https://public.example.com/", { ...DNS, dohResolverUrl: "not a url" })).toMatch(
      /misconfigured/,
    );
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it.each(["https://93.184.216.34/x", "https://[2606:4700::1111]/", "https://1.1.1.1:8443/"])(
    "does not resolve the IP literal %s",
    async (raw) => {
      expect((await checkWebhookUrl(raw, DNS)).ok).toBe(true);
      expect(fetchSpy).not.toHaveBeenCalled();
    },
  );

  it.each([
    ["https://10.0.0.1/", /private network/],
    ["https://[::1]/", /loopback/],
    ["http://public.example.com/", /must use https/],
    ["https://localhost/", /local/],
    ["https://user@public.example.com/", /Userinfo/],
  ])("refuses %s on syntax alone, without fetching", async (raw, reason) => {
    expect(await refused(raw)).toMatch(reason);
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it("does not resolve the development hosts when allowInsecure is on", async () => {
    const opts = { ...DNS, allowInsecure: true };
    expect((await checkWebhookUrl("http://localhost:3000/x", opts)).ok).toBe(true);
    expect((await checkWebhookUrl("http://127.0.0.1:9000", opts)).ok).toBe(true);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(await refused("http://public.example.com/", opts)).toMatch(/must use https/);
  });
});
