import { z } from "@hono/zod-openapi";
import { checkWebhookUrlSyntax } from "../../lib/url-safety";

// The field shapes every kind's request is made of, each refusal naming its rule (`details[].rule`).

/** Counted in Unicode code points, as the operator counts characters: an emoji is one. */
export const codePoints = (s: string): number => [...s].length;

/** A string of 1 to `max` code points (`min`/`max` name the rule), at `path` in messages. */
export function boundedText(path: string, max: number, opts: { example?: string; description?: string } = {}) {
  return z
    .string({ error: `${path} must be a string.` })
    .refine((v) => codePoints(v) >= 1, { error: `${path} is empty.`, params: { rule: "min" } })
    .refine((v) => codePoints(v) <= max, {
      error: `${path} is longer than ${max} characters (Unicode code points).`,
      params: { rule: "max" },
    })
    .openapi({ minLength: 1, maxLength: max, ...opts });
}

/**
 * A file the operator fetches and sends on: an https URL of a public host, by the rules of a
 * webhook URL from its text alone (src/lib/url-safety.ts): no other scheme, no credentials, no
 * private, loopback, link-local or metadata address, no name that only resolves inside a network.
 * It is not resolved here: we never fetch it; the operator fetches it from its own network.
 */
export function publicHttpsLink(path: string) {
  return z
    .string({ error: `${path} must be an https URL.` })
    .superRefine((link, ctx) => {
      const checked = checkWebhookUrlSyntax(link, { allowInsecure: false });
      if (!checked.ok)
        ctx.addIssue({
          code: "custom",
          message: `${path} must be an https URL of a public host: ${checked.reason}`,
          params: { rule: "public_https" },
        });
    })
    .openapi({ format: "uri", example: "https://cdn.example.com/parcel.png" });
}

/** Adds a `unique` issue at each later repetition of a value (`key`) among `items`. */
export function uniqueBy<T>(
  items: readonly T[],
  key: (item: T) => string,
  ctx: z.RefinementCtx,
  path: (index: number) => PropertyKey[],
  what: string,
): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k))
      ctx.addIssue({
        code: "custom",
        path: path(i),
        message: `${what} "${k}" is repeated.`,
        params: { rule: "unique" },
      });
    seen.add(k);
  });
}
