import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { config, ConfigError, parseConfig, type ConfigVar } from "../../src/config";

const base: Record<ConfigVar, string> = {
  API_KEY_PREFIX: "msg_",
  UPSTREAM_CLOUD_API_BASE_URL: "https://graph.facebook.com",
  UPSTREAM_CLOUD_API_VERSION: "v26.0",
  UPSTREAM_MESSAGING_PRODUCT: "whatsapp",
  UPSTREAM_TIMEOUT_MS: "15000",
  UPSTREAM_STAMP_CALLS: "false",
  UPSTREAM_MEDIA_HOSTS: "",
  OPERATOR_APPLY_WITHIN_MS: "",
  DOH_RESOLVER_URL: "https://cloudflare-dns.com/dns-query",
  ALLOW_INSECURE_WEBHOOK_URLS: "false",
  WEBHOOK_TIMEOUT_MS: "10000",
  WEBHOOK_RETRY_DELAYS_SECONDS: "",
  MEDIA_COPY_RETRY_DELAYS_SECONDS: "",
  EVENT_PUBLISH_DELAY_MS: "",
  UNKNOWN_OUTCOME_WINDOW_MS: "",
  DRAIN_SESSION_MS: "10000",
  SERVER_TIMING: "false",
  DEV_OBJECT_RESTARTS: "false",
  DEV_EVENT_TAP_URL: "",
};

describe("config", () => {
  it("parses wrangler.toml's vars into typed values", () => {
    expect(parseConfig(base)).toEqual({
      apiKeyPrefix: "msg_",
      operator: {
        baseUrl: "https://graph.facebook.com",
        version: "v26.0",
        messagingProduct: "whatsapp",
        timeoutMs: 15_000,
        stampCalls: false,
        applyWithinMs: 3_000,
        mediaHosts: ["lookaside.fbsbx.com"],
      },
      webhooks: {
        allowInsecureUrls: false,
        dohResolverUrl: "https://cloudflare-dns.com/dns-query",
        timeoutMs: 10_000,
        retryDelaysSeconds: undefined,
      },
      media: { copyRetryDelaysSeconds: [10, 60, 300, 1800, 3600] },
      eventPublishDelayMs: undefined,
      unknownOutcomeWindowMs: undefined,
      drainSessionMs: 10_000,
      serverTiming: false,
      dev: { objectRestarts: false, eventTapUrl: undefined },
    });
  });

  it("reads the soak's overrides and flags", () => {
    const c = parseConfig({
      ...base,
      UPSTREAM_STAMP_CALLS: "true",
      ALLOW_INSECURE_WEBHOOK_URLS: "true",
      SERVER_TIMING: "true",
      WEBHOOK_RETRY_DELAYS_SECONDS: "0, 2,5",
      MEDIA_COPY_RETRY_DELAYS_SECONDS: "0,1",
      EVENT_PUBLISH_DELAY_MS: "0",
      UNKNOWN_OUTCOME_WINDOW_MS: " 90000 ",
      DRAIN_SESSION_MS: "0",
      UPSTREAM_MEDIA_HOSTS: " lookaside.fbsbx.com, Media.Example.net",
      DEV_OBJECT_RESTARTS: "true",
      DEV_EVENT_TAP_URL: "http://127.0.0.1:8923/tap",
    });
    expect(c.operator.stampCalls).toBe(true);
    expect(c.operator.mediaHosts).toEqual(["lookaside.fbsbx.com", "media.example.net"]);
    expect(c.dev).toEqual({ objectRestarts: true, eventTapUrl: "http://127.0.0.1:8923/tap" });
    expect(c.webhooks.allowInsecureUrls).toBe(true);
    expect(c.serverTiming).toBe(true);
    expect(c.webhooks.retryDelaysSeconds).toEqual([0, 2, 5]);
    expect(c.media.copyRetryDelaysSeconds).toEqual([0, 1]);
    expect(c.eventPublishDelayMs).toBe(0);
    expect(c.unknownOutcomeWindowMs).toBe(90_000);
    expect(c.drainSessionMs).toBe(0);
  });

  it("gives the defaults for empty or missing values, each written once in src/config.ts", () => {
    const c = parseConfig({
      ...base,
      UPSTREAM_TIMEOUT_MS: "",
      WEBHOOK_TIMEOUT_MS: " ",
      DRAIN_SESSION_MS: undefined,
      SERVER_TIMING: undefined,
    });
    expect(c.operator.timeoutMs).toBe(15_000);
    expect(c.webhooks.timeoutMs).toBe(10_000);
    expect(c.drainSessionMs).toBe(0);
    expect(c.serverTiming).toBe(false);
  });

  it.each<[ConfigVar, string, string]>([
    ["UPSTREAM_TIMEOUT_MS", "15s", "expected a whole number"],
    ["UPSTREAM_TIMEOUT_MS", "0", "above 0"],
    ["WEBHOOK_TIMEOUT_MS", "-5", "expected a whole number"],
    ["EVENT_PUBLISH_DELAY_MS", "1.5", "expected a whole number"],
    ["DRAIN_SESSION_MS", "ten", "expected a whole number"],
    ["OPERATOR_APPLY_WITHIN_MS", "0", "above 0"],
    ["ALLOW_INSECURE_WEBHOOK_URLS", "yes", 'expected "true" or "false"'],
    ["WEBHOOK_RETRY_DELAYS_SECONDS", "0,5,x", "comma-separated"],
    ["UPSTREAM_CLOUD_API_BASE_URL", "graph.facebook.com", "absolute URL"],
    ["API_KEY_PREFIX", "", "must not be empty"],
    ["UPSTREAM_MEDIA_HOSTS", "https://lookaside.fbsbx.com", "host names, comma-separated"],
    ["UPSTREAM_MEDIA_HOSTS", "lookaside.fbsbx.com,", "host names, comma-separated"],
    ["DEV_OBJECT_RESTARTS", "1", 'expected "true" or "false"'],
    ["DEV_EVENT_TAP_URL", "https://example.com/tap", "expected an http://127.0.0.1 URL"],
    ["DEV_EVENT_TAP_URL", "http://127.0.0.1.example.com/tap", "expected an http://127.0.0.1 URL"],
  ])("refuses %s = %j with an error naming the var", (name, value, reason) => {
    const attempt = () => parseConfig({ ...base, [name]: value });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`${name} ${JSON.stringify(value)}`);
    expect(attempt).toThrow(reason);
  });

  it("names every bad var at once", () => {
    expect(() => parseConfig({ ...base, UPSTREAM_TIMEOUT_MS: "x", SERVER_TIMING: "1" })).toThrow(
      /UPSTREAM_TIMEOUT_MS "x".*; SERVER_TIMING "1"/,
    );
  });

  it("parses the Worker's own env, and again when a copy changes a value", () => {
    expect(config(env).apiKeyPrefix).toBe(env.API_KEY_PREFIX);
    expect(config(env)).toBe(config(env));
    expect(config({ ...env, WEBHOOK_TIMEOUT_MS: "50" }).webhooks.timeoutMs).toBe(50);
  });
});
