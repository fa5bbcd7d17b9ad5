import { FieldError } from "../../dashboard/components";
import { MEDIA_KINDS, MEDIA_LIMITS } from "../../messages/kinds/media";
import { INTERACTIVE_LIMITS } from "../../messages/kinds/interactive";
import { buttonIdOf, TEST_MESSAGE_FIELDS, type TestMessageForm } from "./sandbox-test-send";

// A sandbox number's "send a test message" forms on its page (developers and owners): a media
// message by link and reply buttons, sent as `POST /api/v2/messages` sends them.

/** A refused test send: which form, the values typed, each error beside its field, and the key to reuse. */
export interface TestMessageState {
  form: TestMessageForm;
  values: Record<string, string>;
  fieldErrors: Record<string, string>;
  message: string;
  idempotencyKey: string;
}

const LABELS: Record<string, string> = {
  to: "Recipient",
  mediaType: "Type",
  link: "Link (https, public)",
  caption: "Caption (image, video, document)",
  filename: "File name (document)",
  body: "Body",
};
const labelOf = (field: string) => LABELS[field] ?? `Button ${field.slice("button_".length)} title`;

const HINTS: Record<string, string> = {
  to: "E.164 digits without '+': a test contact, or someone who wrote in the last 24 hours.",
  link: "The operator fetches it; the dashboard never does.",
  caption: `At most ${MEDIA_LIMITS.caption} characters.`,
  filename: `At most ${MEDIA_LIMITS.filename} characters; the recipient sees it.`,
  body: `At most ${INTERACTIVE_LIMITS.buttonBody} characters.`,
};

function Field({ form, field, state }: { form: TestMessageForm; field: string; state: TestMessageState | undefined }) {
  const id = `test-${form}-${field}`;
  const value = state?.values[field] ?? "";
  const error = state?.fieldErrors[field];
  const aria = { "aria-invalid": error ? "true" : undefined, "aria-describedby": error ? `${id}-error` : undefined };
  const button = /^button_(\d+)$/.exec(field);
  return (
    <div class="field">
      <label for={id}>{labelOf(field)}</label>
      {field === "mediaType" ? (
        <select id={id} name={field} {...aria}>
          {MEDIA_KINDS.map((k) => (
            <option value={k} selected={k === (value || "image")}>
              {k}
            </option>
          ))}
        </select>
      ) : field === "body" ? (
        <textarea id={id} name={field} rows={3} required {...aria}>
          {value}
        </textarea>
      ) : (
        <input
          id={id}
          name={field}
          type={field === "link" ? "url" : "text"}
          required={field === "to" || field === "link" || field === "button_1"}
          autocomplete="off"
          spellcheck={false}
          {...(field === "to" ? { inputmode: "numeric", placeholder: "5511999998888" } : {})}
          {...(field === "link" ? { placeholder: "https://cdn.example.com/parcel.png" } : {})}
          value={value}
          {...aria}
        />
      )}
      {HINTS[field] ? <span class="hint">{HINTS[field]}</span> : null}
      {button ? (
        <span class="hint">
          At most {INTERACTIVE_LIMITS.buttonTitle} characters; tapped, it answers with id{" "}
          <code>{buttonIdOf(Number(button[1]))}</code>.
        </span>
      ) : null}
      <FieldError field={id} message={error} />
    </div>
  );
}

function TestForm({
  numberId,
  form,
  title,
  state,
}: {
  numberId: string;
  form: TestMessageForm;
  title: string;
  state: TestMessageState | undefined;
}) {
  const mine = state?.form === form ? state : undefined;
  return (
    <details open={mine !== undefined}>
      <summary>{title}</summary>
      <form method="post" action={`/dashboard/numbers/${numberId}/test-messages`} class="stack">
        {mine ? (
          <p class="form-error" role="alert">
            {mine.message}
          </p>
        ) : null}
        <input type="hidden" name="form" value={form} />
        <input type="hidden" name="idempotencyKey" value={mine?.idempotencyKey ?? crypto.randomUUID()} />
        {TEST_MESSAGE_FIELDS[form].map((field) => (
          <Field form={form} field={field} state={mine} />
        ))}
        <button type="submit">Send the test</button>
      </form>
    </details>
  );
}

/** The section with both forms; `state` re-renders a refused one with its errors. */
export function TestMessageForms({ numberId, state }: { numberId: string; state: TestMessageState | undefined }) {
  return (
    <section aria-labelledby="test-messages-heading" class="card">
      <h2 id="test-messages-heading">Send a test message</h2>
      <p>
        A media message by link or reply buttons, checked and sent exactly as <code>POST /api/v2/messages</code> sends
        them (the same limits, quota and 24-hour window). Its page shows what it carried and its statuses.
      </p>
      <TestForm numberId={numberId} form="media" title="Media by link" state={state} />
      <TestForm numberId={numberId} form="buttons" title="Reply buttons" state={state} />
    </section>
  );
}
