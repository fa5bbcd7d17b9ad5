import type { ErrorDetail } from "../../lib/errors";
import { issuesToDetails } from "../../lib/validation";
import { sendMessage } from "../../engine/messages";
import { IDEMPOTENCY_KEY } from "../../domain/send-request";
import { ownContentOf, SendMessageRequestV2 } from "../../domain/send-request-v2";
import { MEDIA_KINDS } from "../../messages/kinds/media";
import { INTERACTIVE_LIMITS } from "../../messages/kinds/interactive";
import { richSendContent } from "./rich-send";
import { readTestSendOutcome, type TestSendRefusal } from "./test-send-outcome";

// The dashboard's test sends of rich messages from a sandbox number: a media message by link, or
// reply buttons. The form's fields become the body of `POST /api/v2/messages`, checked by its
// schema, its window and number checks (rich-send.ts) and handed to the engine's send as the
// API's (limits, quota, idempotency), without an HTTP call to our own API.

/** The two forms: which one a submission or a refusal belongs to. */
export const TEST_MESSAGE_FORMS = ["media", "buttons"] as const;
export type TestMessageForm = (typeof TEST_MESSAGE_FORMS)[number];

/** The form fields of each form, in the order they are shown. */
export const TEST_MESSAGE_FIELDS = {
  media: ["to", "mediaType", "link", "caption", "filename"],
  buttons: ["to", "body", ...Array.from({ length: INTERACTIVE_LIMITS.buttons }, (_, i) => `button_${i + 1}`)],
} as const satisfies Record<TestMessageForm, readonly string[]>;

/** A reply button's id: its place on the form, which comes back as the answer's id when tapped. */
export const buttonIdOf = (place: number): string => `button_${place}`;

interface Built {
  request: unknown;
  /** For each button of the request, in order, its field on the form. */
  buttonFields: string[];
}

const optional = (value: string | undefined) => {
  const v = (value ?? "").trim();
  return v === "" ? undefined : v;
};

/** The request body the form stands for: blank optional fields are left out, as a customer would. */
function requestOf(form: TestMessageForm, channelNumberId: string, fields: Record<string, string>): Built {
  const to = (fields.to ?? "").trim();
  if (form === "media") {
    const type = fields.mediaType ?? "";
    const media = {
      link: (fields.link ?? "").trim(),
      ...(optional(fields.caption) !== undefined ? { caption: fields.caption } : {}),
      ...(optional(fields.filename) !== undefined ? { filename: optional(fields.filename) } : {}),
    };
    return { request: { channelNumberId, to, type, [type]: media }, buttonFields: [] };
  }
  const buttonFields = TEST_MESSAGE_FIELDS.buttons.filter((f) => f.startsWith("button_") && optional(fields[f]));
  return {
    request: {
      channelNumberId,
      to,
      type: "interactive",
      interactive: {
        type: "button",
        body: fields.body ?? "",
        buttons: buttonFields.map((f) => ({ id: f, title: fields[f] })),
      },
    },
    buttonFields,
  };
}

/** The form field a refusal's path names, or null when it names none (shown above the form). */
function fieldOfPath(form: TestMessageForm, path: string, buttonFields: string[]): string | null {
  if (path === "to" || path === "toUserId") return "to";
  if (form === "media") {
    if (path === "type") return "mediaType";
    const m = /^(?:image|video|audio|document|sticker)(?:\.(link|caption|filename))?$/.exec(path);
    if (!m) return null;
    return m[1] ?? "mediaType";
  }
  if (path === "interactive.body") return "body";
  const b = /^interactive\.buttons(?:\.(\d+))?/.exec(path);
  if (b) return b[1] === undefined ? "button_1" : (buttonFields[Number(b[1])] ?? "button_1");
  return null;
}

export interface TestMessageInput {
  workspaceId: string;
  channelNumberId: string;
  form: TestMessageForm;
  fields: Record<string, string>;
}

/** The outcome of a test send: accepted (or the replay of an accepted one), or refused with the reasons. */
export type TestMessageResult =
  | { ok: true; jobId: string; duplicate: boolean; type: string }
  | {
      ok: false;
      status: 400 | 403 | 409 | 429;
      message: string;
      /** Each refusal beside its field (field name → message naming the rule, as the API's `details[].rule`). */
      fieldErrors: Record<string, string>;
      idempotencyKey: string;
    };

const withRule = (d: ErrorDetail) => `${d.message} (rule: ${d.rule})`;

/** Sends the form's message to the recipient typed in, as `POST /api/v2/messages` would. */
export async function sendTestMessage(env: Env, input: TestMessageInput): Promise<TestMessageResult> {
  const { form, fields } = input;
  // The form carries its own key: a double-submitted form is one message (the second is its replay).
  const submitted = fields.idempotencyKey ?? "";
  const idempotencyKey = IDEMPOTENCY_KEY.test(submitted) ? submitted : crypto.randomUUID();
  const built = requestOf(form, input.channelNumberId, fields);
  const refused = (
    status: TestSendRefusal,
    message: string,
    details: ErrorDetail[] = [],
    key = idempotencyKey,
  ): TestMessageResult => {
    const fieldErrors: Record<string, string> = {};
    const unplaced: string[] = [];
    for (const d of details) {
      const field = fieldOfPath(form, d.path, built.buttonFields);
      if (field === null) unplaced.push(`${d.path}: ${withRule(d)}`);
      else fieldErrors[field] = fieldErrors[field] ? `${fieldErrors[field]} ${withRule(d)}` : withRule(d);
    }
    return { ok: false, status, message: [message, ...unplaced].join(" "), fieldErrors, idempotencyKey: key };
  };

  const parsed = SendMessageRequestV2.safeParse(built.request);
  if (!parsed.success)
    return refused(
      400,
      "The test was not sent: correct the fields below.",
      issuesToDetails(parsed.error.issues, undefined, built.request),
    );
  const request = parsed.data;
  if (!(MEDIA_KINDS as readonly string[]).includes(request.type) && request.type !== "interactive")
    return refused(400, "This form sends a media message or reply buttons only.");
  // A refusal of the window or the number goes to the workspace object as the API's does: it
  // answers it once it knows the key is not bound (a replay of an accepted send stays a replay).
  const content = await richSendContent(env, input.workspaceId, request, ownContentOf(request));
  const outcome = await sendMessage(env, { workspaceId: input.workspaceId, idempotencyKey, request, content });
  return readTestSendOutcome(outcome, {
    accepted: (jobId, duplicate) => ({ ok: true, jobId, duplicate, type: request.type }),
    refused,
  });
}
