import type { ErrorDetail } from "../../lib/errors";
import { sendMessage } from "../../engine/messages";
import { IDEMPOTENCY_KEY } from "../../domain/send-request";
import { SendMessageRequestV2 } from "../../domain/send-request-v2";
import { templateSendContent, type TemplateParameters } from "../../domain/template-send";
import { templatesForSend } from "./number-templates";
import type { StoredTemplate } from "../../domain/template";
import { readTestSendOutcome, type TestSendRefusal } from "../messages/test-send-outcome";

// The dashboard's "send a test" of a template: the form's fields become the request body of
// `POST /api/v2/messages`, checked by the same schema and template checks, and handed to the
// engine's send as the API's (limits, quota, idempotency), without an HTTP call to our own API.

/** A form field's name for each fillable part of a template (what the errors are placed beside). */
export const fieldOf = {
  to: "to",
  body: (param: string) => `body_${param}`,
  header: "header",
  button: (index: number) => `button_${index}`,
} as const;

/** Which form of the page a submission or a refusal belongs to: one per template and language. */
export const formKey = (t: Pick<StoredTemplate, "name" | "language">): string => `${t.name}\n${t.language}`;

/** The fields a template's form has, in the order they are shown. */
export function fieldsOf(t: StoredTemplate): string[] {
  const { header, body, buttons } = t.spec;
  const headerTakes = header !== null && (header.format !== "TEXT" || header.params.length > 0);
  return [
    fieldOf.to,
    ...(headerTakes ? [fieldOf.header] : []),
    ...body.params.map(fieldOf.body),
    ...buttons.filter((b) => b.params.length > 0).map((b) => fieldOf.button(b.index)),
  ];
}

/** The `template.parameters` of a request, from the values typed into the template's form. */
export function parametersFrom(t: StoredTemplate, fields: Record<string, string>): TemplateParameters {
  const { header, body, buttons } = t.spec;
  const value = (name: string) => fields[name] ?? "";
  const parameters: TemplateParameters = {};
  if (body.params.length > 0)
    parameters.body =
      t.parameterFormat === "NAMED"
        ? Object.fromEntries(body.params.map((p) => [p, value(fieldOf.body(p))]))
        : body.params.map((p) => value(fieldOf.body(p)));
  if (header !== null && header.format !== "TEXT") parameters.header = { link: value(fieldOf.header).trim() };
  else if (header !== null && header.params.length > 0) parameters.header = value(fieldOf.header);
  const urlButtons = buttons.filter((b) => b.params.length > 0);
  if (urlButtons.length > 0)
    parameters.buttons = urlButtons.map((b) => ({ index: b.index, value: value(fieldOf.button(b.index)) }));
  return parameters;
}

/**
 * The form field a refusal's path names (`to`, `template.parameters.body.0` or `.body.first_name`,
 * `.header`, `.buttons.1`), or null when it names none (shown above the form instead).
 */
export function fieldOfPath(t: StoredTemplate | undefined, path: string): string | null {
  if (path === "to" || path === "toUserId") return fieldOf.to;
  const m = /^template\.parameters\.(body|header|buttons)(?:\.([A-Za-z0-9_]+))?/.exec(path);
  if (!m || !t) return null;
  const [, part, key] = m;
  if (part === "header") return fieldOf.header;
  if (part === "buttons") return key === undefined ? null : fieldOf.button(Number(key));
  if (key === undefined) return t.spec.body.params[0] === undefined ? null : fieldOf.body(t.spec.body.params[0]);
  // A positional value is named by its place in the array, a named one by its name.
  const param = t.parameterFormat === "NAMED" ? key : t.spec.body.params[Number(key)];
  return param === undefined ? null : fieldOf.body(param);
}

export interface TestSendInput {
  workspaceId: string;
  channelNumberId: string;
  name: string;
  language: string;
  fields: Record<string, string>;
}

/** The outcome of a test send: accepted (or the replay of an accepted one), or refused with the reasons. */
export type TestSendResult =
  | { ok: true; jobId: string; duplicate: boolean }
  | {
      ok: false;
      status: 400 | 403 | 409 | 429;
      message: string;
      /** Each refusal beside its field (field name → message). */
      fieldErrors: Record<string, string>;
      idempotencyKey: string;
    };

const messageOf = (details: ErrorDetail[], fallback: string) => details.map((d) => d.message).join(" ") || fallback;

/** Sends the template to the recipient typed in, as `POST /api/v2/messages` would. */
export async function sendTemplateTest(env: Env, input: TestSendInput): Promise<TestSendResult> {
  const { fields } = input;
  // The form carries its own key: a double-submitted form is one message (the second is its replay).
  const submitted = fields.idempotencyKey ?? "";
  const idempotencyKey = IDEMPOTENCY_KEY.test(submitted) ? submitted : crypto.randomUUID();
  const found = await templatesForSend(env.DB, input.workspaceId, input.channelNumberId, input.name);
  const template = found?.templates.find((t) => t.language === input.language);
  const refused = (
    status: TestSendRefusal,
    message: string,
    details: ErrorDetail[] = [],
    key = idempotencyKey,
  ): TestSendResult => {
    const fieldErrors: Record<string, string> = {};
    for (const d of details) {
      const field = fieldOfPath(template, d.path);
      if (field !== null) fieldErrors[field] = fieldErrors[field] ? `${fieldErrors[field]} ${d.message}` : d.message;
    }
    const unplaced = details.filter((d) => fieldOfPath(template, d.path) === null);
    const text = unplaced.length > 0 ? `${message} ${messageOf(unplaced, "")}` : message;
    return { ok: false, status, message: text, fieldErrors, idempotencyKey: key };
  };
  if (!found) return refused(403, "This number is no longer connected to the workspace.");

  const parsed = SendMessageRequestV2.safeParse({
    channelNumberId: input.channelNumberId,
    to: (fields[fieldOf.to] ?? "").trim(),
    type: "template",
    template: {
      name: input.name,
      language: input.language,
      ...(template ? { parameters: parametersFrom(template, fields) } : {}),
    },
  });
  if (!parsed.success)
    return refused(
      400,
      "The test was not sent: correct the fields below.",
      parsed.error.issues.map((i) => ({ path: i.path.join("."), rule: i.code, message: i.message })),
    );
  const request = parsed.data;
  // The schema guarantees the template of a template send.
  const content = templateSendContent(found.templates, request.template!, found.hasAccount);
  const outcome = await sendMessage(env, { workspaceId: input.workspaceId, idempotencyKey, request, content });
  return readTestSendOutcome(outcome, {
    accepted: (jobId, duplicate) => ({ ok: true, jobId, duplicate }),
    refused,
  });
}
