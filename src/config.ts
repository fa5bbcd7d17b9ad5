import { z } from "zod";

// The Worker's vars (`[vars]` in wrangler.toml), parsed in one place: every
// caller reads `config(env).x`, typed, and a var with a value that cannot mean
// anything stops the request, the message batch or the object that reads it with
// an error naming the var, instead of being replaced by a default unnoticed.
// Secrets are not here: each has its own check where it is used (ADMIN_TOKEN's
// length in admin-auth, the encryption keys in secret-box).

/** An empty var means "not set" (wrangler.toml documents several as "Empty: the default"). */
const unset = (v: unknown): unknown => (typeof v === "string" && v.trim() === "" ? undefined : v);

const wholeNumber = z.string().trim().regex(/^\d+$/, "expected a whole number").transform(Number);
const positiveMs = wholeNumber.refine((n) => n > 0, "expected a number of milliseconds above 0");

const optional = <T extends z.ZodType>(schema: T) => z.preprocess(unset, schema.optional());
const withDefault = <T extends z.ZodType<number>>(schema: T, fallback: number) =>
  z.preprocess(unset, schema.optional()).transform((v) => v ?? fallback);
/** "true" or "false"; unset is false. */
const flag = z
  .preprocess(unset, z.enum(["true", "false"], 'expected "true" or "false"').optional())
  .transform((v) => v === "true");
const required = z.string().trim().min(1, "must not be empty");
const url = z.url("expected an absolute URL");
/** Local soak runs only: a receiver on the loopback address, never anywhere else. */
const loopbackUrl = url.refine((u) => /^http:\/\/127\.0\.0\.1(:\d+)?\//.test(u), "expected an http://127.0.0.1 URL");
const secondsList = z
  .string()
  .regex(/^\s*\d+\s*(,\s*\d+\s*)*$/, "expected whole numbers of seconds, comma-separated")
  .transform((s) => s.split(",").map((v) => Number(v.trim())));

const hostName = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const hostList = z
  .string()
  .transform((s) => s.split(",").map((h) => h.trim().toLowerCase()))
  .refine((hosts) => hosts.every((h) => hostName.test(h)), "expected host names, comma-separated");

/**
 * Where the operator's media lookup may send us for the bytes (with the number's token): the host
 * of the URLs it answers. Meta's reference ("Media", Cloud API) shows that URL only as `<URL>`; the
 * references of WhatsApp Business solution providers that relay it (360dialog's, Kapso's) show it
 * as `https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=…`. Whoever runs the
 * service and sees another host in its logs ("the operator's media URL names a host not allowed")
 * adds it here.
 */
export const OPERATOR_MEDIA_HOSTS = ["lookaside.fbsbx.com"];

const VarsSchema = z.object({
  API_KEY_PREFIX: required,
  // The operator's vars keep their deployed names (UPSTREAM_*): renaming one would break every deployment's settings.
  UPSTREAM_CLOUD_API_BASE_URL: url,
  UPSTREAM_CLOUD_API_VERSION: required,
  UPSTREAM_MESSAGING_PRODUCT: required,
  UPSTREAM_TIMEOUT_MS: withDefault(positiveMs, 15_000),
  UPSTREAM_STAMP_CALLS: flag,
  UPSTREAM_MEDIA_HOSTS: optional(hostList),
  OPERATOR_APPLY_WITHIN_MS: withDefault(positiveMs, 3_000),
  DOH_RESOLVER_URL: url,
  ALLOW_INSECURE_WEBHOOK_URLS: flag,
  WEBHOOK_TIMEOUT_MS: withDefault(positiveMs, 10_000),
  WEBHOOK_RETRY_DELAYS_SECONDS: optional(secondsList),
  MEDIA_COPY_RETRY_DELAYS_SECONDS: optional(secondsList),
  EVENT_PUBLISH_DELAY_MS: optional(wholeNumber),
  UNKNOWN_OUTCOME_WINDOW_MS: optional(positiveMs),
  // Unset: one pass per alarm (the tests' setting); wrangler.toml sets production's 10 s.
  DRAIN_SESSION_MS: withDefault(wholeNumber, 0),
  SERVER_TIMING: flag,
  DEV_OBJECT_RESTARTS: flag,
  DEV_EVENT_TAP_URL: optional(loopbackUrl),
});

/** 10 s, 1 min, 5 min, 30 min, 1 h: six attempts within ~1.6 hours, well inside the operator's 7 days. */
export const MEDIA_COPY_RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 3600];

export type ConfigVar = keyof typeof VarsSchema.shape;
const VAR_NAMES = Object.keys(VarsSchema.shape) as ConfigVar[];

/** The vars `config` reads: a whole `Env`, or a test's copy of one. */
export type ConfigVars = Pick<Env, ConfigVar>;

const toConfig = (v: z.output<typeof VarsSchema>) => ({
  /** Keys look like `<apiKeyPrefix>live_<43 characters>`. */
  apiKeyPrefix: v.API_KEY_PREFIX,
  operator: {
    baseUrl: v.UPSTREAM_CLOUD_API_BASE_URL,
    version: v.UPSTREAM_CLOUD_API_VERSION,
    messagingProduct: v.UPSTREAM_MESSAGING_PRODUCT,
    /** One operator call; a timed-out message is never resent. */
    timeoutMs: v.UPSTREAM_TIMEOUT_MS,
    /** Local soak runs: X-Call-Started-At on each operator call. */
    stampCalls: v.UPSTREAM_STAMP_CALLS,
    /**
     * How long the operator's webhook POST applies its items before it queues the rest (the
     * operator waits meanwhile). `npm run bench:cost` lengthens it: its clock is simulated.
     */
    applyWithinMs: v.OPERATOR_APPLY_WITHIN_MS,
    /**
     * The only hosts a media download (which carries the number's token) goes to, over https, besides
     * the operator's own base URL; a lookup that names another is refused without a request.
     */
    mediaHosts: v.UPSTREAM_MEDIA_HOSTS ?? OPERATOR_MEDIA_HOSTS,
  },
  webhooks: {
    /** Local development only: http://localhost and http://127.0.0.1 receivers. */
    allowInsecureUrls: v.ALLOW_INSECURE_WEBHOOK_URLS,
    dohResolverUrl: v.DOH_RESOLVER_URL,
    /** One delivery attempt. */
    timeoutMs: v.WEBHOOK_TIMEOUT_MS,
    /** Local soak runs: a short retry schedule; undefined is the documented one. */
    retryDelaysSeconds: v.WEBHOOK_RETRY_DELAYS_SECONDS,
  },
  media: {
    /**
     * Delays before each new attempt of an inbound media copy; one attempt more than delays, then
     * the copy is recorded failed. The test suite sets a short one.
     */
    copyRetryDelaysSeconds: v.MEDIA_COPY_RETRY_DELAYS_SECONDS ?? MEDIA_COPY_RETRY_DELAYS_SECONDS,
  },
  /**
   * How long a workspace's events wait to be packed together, on the object's clock (undefined:
   * 1 s). The test suite sets 0: each change's events are published at once.
   */
  eventPublishDelayMs: v.EVENT_PUBLISH_DELAY_MS,
  /** Local soak runs: how long an unknown outcome waits for the operator; undefined is the operator's 7 days. */
  unknownOutcomeWindowMs: v.UNKNOWN_OUTCOME_WINDOW_MS,
  /** How long one drain session of a number object may keep its alarm (0: one pass). */
  drainSessionMs: v.DRAIN_SESSION_MS,
  /** `npm run bench`: the Server-Timing header. */
  serverTiming: v.SERVER_TIMING,
  /** Local soak runs only (`npm run soak`); false and undefined in production's wrangler.toml. */
  dev: {
    /** `POST /admin/v1/dev/object-restarts` exists: it makes the named objects end themselves (their restart). */
    objectRestarts: v.DEV_OBJECT_RESTARTS,
    /** Where a workspace tells the ids of the events each queue send carried, once the queue accepted it. */
    eventTapUrl: v.DEV_EVENT_TAP_URL,
  },
});

export type Config = Readonly<ReturnType<typeof toConfig>>;

/** Thrown for a var whose value cannot be used; the message names every such var. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export function parseConfig(vars: Partial<Record<ConfigVar, string>>): Config {
  const parsed = VarsSchema.safeParse(vars);
  if (parsed.success) return toConfig(parsed.data);
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? "?");
    return `${name} ${JSON.stringify(vars[name as ConfigVar] ?? null)}: ${issue.message}`;
  });
  throw new ConfigError(`Invalid configuration (wrangler.toml [vars]): ${problems.join("; ")}`);
}

// Keyed by the raw values rather than by the env object: tests run the Worker on
// copies of env with one var changed, and one test changes a var in place.
const parsedByValues = new Map<string, Config>();
const MAX_CACHED = 16;

/** The Worker's vars, parsed and validated once per distinct set of values. */
export function config(env: ConfigVars): Config {
  const key = VAR_NAMES.map((name) => env[name] ?? "\u0001").join("\u0000");
  let parsed = parsedByValues.get(key);
  if (!parsed) {
    parsed = parseConfig(env);
    if (parsedByValues.size >= MAX_CACHED) parsedByValues.clear();
    parsedByValues.set(key, parsed);
  }
  return parsed;
}
