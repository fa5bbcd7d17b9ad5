import { z } from "@hono/zod-openapi";
import type { ErrorCode, ErrorDetail } from "../lib/errors";
import { fill, type StoredTemplate } from "./template";
import {
  MAX_BODY_CODE_POINTS,
  type OperatorTemplatePayload,
  type OutboundContent,
  type TemplateFacts,
} from "../messages/content";
import type { SendRefusal } from "../messages/send";
import { checkWebhookUrlSyntax } from "../lib/url-safety";
import { MEDIA_ID_PATTERN } from "../messages/kinds/media";
import type { UploadedMedia } from "../messages/uploaded-media";

// A template send: the request's `template` object, and how it is checked against the stored
// template and turned into the operator's payload (pure: the route looks the template up).

const codePoints = (s: string): number => [...s].length;

/**
 * The operator's limits on a parameter's text (WhatsApp Cloud API, "Send message templates"):
 * a body parameter up to 32,768 characters when the body is the template's only component,
 * 1,024 otherwise; a text header's parameter 60; a URL button's URL 2,000 in all.
 */
export const PARAMETER_LIMITS = { bodyAlone: 32_768, body: 1_024, header: 60, url: 2_000 } as const;

const Value = z
  .string({ error: "A parameter value must be a string." })
  .min(1, { error: "A parameter value must not be empty." })
  .max(PARAMETER_LIMITS.bodyAlone, {
    error: `A parameter value is longer than ${PARAMETER_LIMITS.bodyAlone} characters.`,
  })
  .openapi({ example: "Ana" });

const NAME_KEY = /^[a-z0-9_]{1,64}$/;

/**
 * A media header's file, which the operator fetches and sends to the recipient: an https URL of a
 * public host, by the rules of a webhook URL (src/lib/url-safety.ts, from the text alone): never
 * another scheme (`javascript:`, `file:`, `data:`), credentials, a private, loopback or link-local
 * address, a cloud metadata service, or a name that only resolves inside a network. The name is
 * not resolved here: we never fetch it, and the operator fetches it from its own network.
 */
const MediaLink = z
  .string({ error: "header.link must be an https URL." })
  .superRefine((link, ctx) => {
    const checked = checkWebhookUrlSyntax(link, { allowInsecure: false });
    if (!checked.ok)
      ctx.addIssue({ code: "custom", message: `header.link must be an https URL of a public host: ${checked.reason}` });
  })
  .openapi({ format: "uri", example: "https://cdn.example.com/parcel.png" });

/** Our media store's file (POST /api/v2/media), which the number uploads to the operator when it sends. */
const MediaRef = z
  .strictObject({
    mediaId: z
      .string({ error: "header.mediaId must be a media id." })
      .regex(MEDIA_ID_PATTERN, { error: "header.mediaId must be the id POST /media answered." })
      .openapi({ format: "uuid", example: "0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f" }),
  })
  .openapi({ description: "A file of the workspace's media store, by its id (`POST /media`)." });

export const TemplateParameters = z
  .strictObject({
    body: z
      .union([
        z.array(Value).max(100).openapi({ description: "`POSITIONAL` templates: `{{1}}`, `{{2}}`… in order." }),
        z
          .record(z.string().regex(NAME_KEY, { error: "A parameter name is lowercase letters, digits and _." }), Value)
          .openapi({ description: "`NAMED` templates: one value per placeholder name." }),
      ])
      .optional()
      .openapi({ example: ["Ana", "#1042", "Friday"] }),
    header: z
      .union([Value, z.strictObject({ link: MediaLink }), MediaRef])
      .optional()
      .openapi({
        description:
          "A `TEXT` header's placeholder (a string), or the media of an `IMAGE`, `VIDEO` or `DOCUMENT` header: a public " +
          "https `link`, or the `mediaId` of a file uploaded to the media store.",
      }),
    buttons: z
      .array(
        z.strictObject({
          index: z
            .number()
            .int()
            .min(0)
            .max(9)
            .openapi({ description: "The button's position in the template (0-based)." }),
          value: Value.openapi({
            description: "A URL button's placeholder (the end of its URL), or a quick-reply button's payload.",
          }),
        }),
      )
      .max(10)
      .optional(),
  })
  .openapi("TemplateParameters");
export type TemplateParameters = z.infer<typeof TemplateParameters>;

export const TemplateContent = z
  .strictObject(
    {
      name: z
        .string({ error: "template.name must be a string." })
        .min(1, { error: "template.name is empty." })
        .max(512, { error: "template.name has more than 512 characters." })
        .openapi({ example: "order_update", description: "The template's name, as `GET /templates` lists it." }),
      language: z
        .string({ error: "template.language must be a string." })
        .regex(/^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/, {
          error: "template.language must be the operator's language code, e.g. en_US or pt_BR.",
        })
        .openapi({ example: "en_US", description: "One of the template's languages, as `GET /templates` lists them." }),
      parameters: TemplateParameters.optional(),
    },
    { error: "template must be an object with a name and a language." },
  )
  .openapi("TemplateContent");
export type TemplateContent = z.infer<typeof TemplateContent>;

export type PreparedTemplate =
  | { ok: true; payload: OperatorTemplatePayload; rendered: string; facts: TemplateFacts }
  | { ok: false; details: ErrorDetail[] };

type TextParam = { type: "text"; text: string; parameter_name?: string };

/**
 * Checks a request's parameters against the template (every placeholder given once, no other,
 * each within the operator's limit) and builds the operator's payload and the rendered text.
 * `headerMedia`: the stored file a media header names by `mediaId` (looked up by the caller; null
 * when the workspace has no such file, or it expired). The payload names it by our id, which the
 * number replaces with the operator's when it sends (operator's media-upload.ts).
 */
export function prepareTemplate(
  t: StoredTemplate,
  request: TemplateContent,
  headerMedia: UploadedMedia | null = null,
): PreparedTemplate {
  const details: ErrorDetail[] = [];
  const bad = (path: string, rule: string, message: string) => details.push({ path, rule, message });
  const p = request.parameters ?? {};
  const named = t.parameterFormat === "NAMED";
  const { header, body, buttons } = t.spec;
  const onlyBody = header === null && t.spec.footer === null && buttons.length === 0;
  const bodyLimit = onlyBody ? PARAMETER_LIMITS.bodyAlone : PARAMETER_LIMITS.body;
  const components: Record<string, unknown>[] = [];
  const values = new Map<string, string>();

  // Body: an array for positional templates, an object for named ones, one value per placeholder.
  const bodyValues = new Map<string, string>();
  if (p.body === undefined) {
    if (body.params.length > 0)
      bad(
        "template.parameters.body",
        "missing",
        `The template's body has ${body.params.length} placeholder(s): ${body.params.map((x) => `{{${x}}}`).join(", ")}.`,
      );
  } else if (Array.isArray(p.body) === named) {
    bad(
      "template.parameters.body",
      "format",
      named
        ? `This template's parameters are NAMED: send an object {${body.params.map((x) => `"${x}": …`).join(", ")}}.`
        : "This template's parameters are POSITIONAL: send an array of values, in order.",
    );
  } else if (Array.isArray(p.body)) {
    const given = p.body;
    if (given.length !== body.params.length)
      bad(
        "template.parameters.body",
        "count",
        `The template's body takes ${body.params.length} value(s); ${given.length} given.`,
      );
    else body.params.forEach((name, i) => bodyValues.set(name, given[i]!));
  } else {
    const given = p.body;
    for (const name of body.params)
      if (given[name] === undefined)
        bad(`template.parameters.body.${name}`, "missing", `The template's body has {{${name}}}: give its value.`);
    for (const name of Object.keys(given))
      if (!body.params.includes(name))
        bad(`template.parameters.body.${name}`, "unknown", `The template's body has no {{${name}}}.`);
    if (details.length === 0) for (const name of body.params) bodyValues.set(name, given[name]!);
  }
  for (const [name, value] of bodyValues) {
    if (codePoints(value) > bodyLimit)
      bad(
        named ? `template.parameters.body.${name}` : `template.parameters.body.${body.params.indexOf(name)}`,
        "max",
        `A body parameter may hold at most ${bodyLimit} characters (the operator's limit${onlyBody ? " for a template made of a body only" : ""}).`,
      );
  }

  // Header: a text placeholder (a string) or a media (a link), only where the template has one.
  let headerText: string | null = null;
  if (header === null || (header.format === "TEXT" && header.params.length === 0)) {
    if (p.header !== undefined)
      bad("template.parameters.header", "not_expected", "The template's header takes no parameter.");
    headerText = header?.text ?? null;
  } else if (header.format === "LOCATION") {
    bad(
      "template.parameters.header",
      "unsupported",
      "Templates with a location header cannot be sent through this API yet.",
    );
  } else if (header.format === "TEXT") {
    const name = header.params[0]!;
    if (typeof p.header !== "string") {
      bad(
        "template.parameters.header",
        p.header === undefined ? "missing" : "type",
        `The template's header has {{${name}}}: give its value as a string.`,
      );
    } else if (codePoints(p.header) > PARAMETER_LIMITS.header) {
      bad(
        "template.parameters.header",
        "max",
        `A header parameter may hold at most ${PARAMETER_LIMITS.header} characters (the operator's limit).`,
      );
    } else {
      const param: TextParam = { type: "text", text: p.header, ...(named ? { parameter_name: name } : {}) };
      components.push({ type: "header", parameters: [param] });
      headerText = fill(header.text ?? "", new Map([[name, p.header]]));
    }
  } else {
    const kind = header.format.toLowerCase();
    if (typeof p.header !== "object")
      bad(
        "template.parameters.header",
        p.header === undefined ? "missing" : "type",
        `The template's header is a ${kind}: give {"link": "https://…"} or {"mediaId": "…"}.`,
      );
    else if ("link" in p.header)
      components.push({ type: "header", parameters: [{ type: kind, [kind]: { link: p.header.link } }] });
    else if (!headerMedia || headerMedia.id !== p.header.mediaId.toLowerCase())
      bad(
        "template.parameters.header.mediaId",
        "unknown_media",
        "No file with this id in the workspace's media store (deleted, expired, or never uploaded): upload it with POST /media.",
      );
    else if (headerMedia.kind !== kind)
      bad(
        "template.parameters.header.mediaId",
        "media_kind",
        `The template's header is a ${kind}; this file is a ${headerMedia.kind} (${headerMedia.contentType}).`,
      );
    else {
      const filename = kind === "document" && headerMedia.filename ? { filename: headerMedia.filename } : {};
      components.push({ type: "header", parameters: [{ type: kind, [kind]: { id: headerMedia.id, ...filename } }] });
    }
  }

  if (bodyValues.size > 0)
    components.push({
      type: "body",
      parameters: body.params.map((name): TextParam => ({
        type: "text",
        text: bodyValues.get(name)!,
        ...(named ? { parameter_name: name } : {}),
      })),
    });
  for (const [name, value] of bodyValues) values.set(name, value);

  // Buttons: a URL button's placeholder must be given; a quick reply's payload may be.
  const given = new Map((p.buttons ?? []).map((b) => [b.index, b.value]));
  for (const b of buttons) {
    const value = given.get(b.index);
    given.delete(b.index);
    if (b.params.length > 0) {
      if (value === undefined) {
        bad(
          `template.parameters.buttons.${b.index}`,
          "missing",
          `Button ${b.index} ("${b.text}") has a URL placeholder: give {"index": ${b.index}, "value": …}.`,
        );
        continue;
      }
      const fixed = codePoints((b.url ?? "").replace(/\{\{\s*1\s*\}\}/, ""));
      if (fixed + codePoints(value) > PARAMETER_LIMITS.url) {
        bad(
          `template.parameters.buttons.${b.index}`,
          "max",
          `Button ${b.index}'s URL would exceed ${PARAMETER_LIMITS.url} characters (the operator's limit).`,
        );
        continue;
      }
      components.push({
        type: "button",
        sub_type: "url",
        index: String(b.index),
        parameters: [{ type: "text", text: value }],
      });
    } else if (value !== undefined) {
      if (b.type !== "QUICK_REPLY") {
        bad(
          `template.parameters.buttons.${b.index}`,
          "not_expected",
          `Button ${b.index} ("${b.text}") takes no value.`,
        );
        continue;
      }
      components.push({
        type: "button",
        sub_type: "quick_reply",
        index: String(b.index),
        parameters: [{ type: "payload", payload: value }],
      });
    }
  }
  for (const index of given.keys())
    bad(`template.parameters.buttons.${index}`, "unknown", `The template has no button ${index} that takes a value.`);

  if (details.length > 0) return { ok: false, details };
  const rendered = [headerText, fill(body.text, values), t.spec.footer].filter((s): s is string => !!s).join("\n\n");
  // The record's text, its events and archives hold at most what a text message's body holds.
  if (codePoints(rendered) > MAX_BODY_CODE_POINTS)
    return {
      ok: false,
      details: [
        {
          path: "template.parameters",
          rule: "max",
          message: `The template's text with these values is ${codePoints(rendered)} characters; at most ${MAX_BODY_CODE_POINTS} (as a text message's body).`,
        },
      ],
    };
  return {
    ok: true,
    payload: { name: t.name, language: { code: t.language }, components },
    rendered,
    facts: { name: t.name, language: t.language, category: t.category, parameterFormat: t.parameterFormat },
  };
}

/**
 * What a template send records, or why it is refused: checked against the number's templates of
 * that name (`candidates`, every language) before anything is queued. `hasAccount`: whether the
 * number has templates at all (a live number connected without its business account id has none).
 */
export function templateSendContent(
  candidates: readonly StoredTemplate[],
  request: TemplateContent,
  hasAccount: boolean,
  headerMedia: UploadedMedia | null = null,
): OutboundContent | SendRefusal {
  const refuse = (code: ErrorCode, message: string, details: ErrorDetail[]): SendRefusal => ({
    refused: { code, message, details },
  });
  if (!hasAccount)
    return refuse(
      "template_not_found",
      "This number has no templates: it was connected without its business account id (wabaId). Reconnect it with wabaId.",
      [{ path: "channelNumberId", rule: "no_account", message: "Templates belong to the number's business account." }],
    );
  if (candidates.length === 0)
    return refuse("template_not_found", `No template named "${request.name}" for this number (see GET /templates).`, [
      { path: "template.name", rule: "unknown", message: "Use a name as GET /templates lists it." },
    ]);
  const t = candidates.find((c) => c.language === request.language);
  if (!t) {
    const languages = candidates.map((c) => c.language).join(", ");
    return refuse(
      "template_language_not_found",
      `Template "${request.name}" has no ${request.language} version; its languages: ${languages}.`,
      [{ path: "template.language", rule: "unknown", message: `One of: ${languages}.` }],
    );
  }
  if (t.status === "PAUSED")
    return refuse(
      "template_paused",
      `Template "${t.name}" (${t.language}) is paused by the operator for low quality; it cannot be sent until it is approved again.`,
      [
        {
          path: "template.name",
          rule: "paused",
          message: "The operator pauses a template for hours after low-quality feedback.",
        },
      ],
    );
  if (t.status !== "APPROVED")
    return refuse(
      "template_not_approved",
      `Template "${t.name}" (${t.language}) is ${t.status}; only APPROVED templates can be sent.`,
      [{ path: "template.name", rule: "not_approved", message: `Its status is ${t.status}.` }],
    );
  const prepared = prepareTemplate(t, request, headerMedia);
  if (!prepared.ok)
    return refuse(
      "template_parameters_invalid",
      `The parameters do not fit template "${t.name}" (${t.language}). See details.`,
      prepared.details,
    );
  return {
    type: "template",
    body: prepared.rendered,
    content: JSON.stringify(prepared.payload),
    details: JSON.stringify({ template: prepared.facts }),
  };
}
