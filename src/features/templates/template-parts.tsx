import type { StoredTemplate } from "../../domain/template";
import type { TemplateParameters } from "../../domain/template-send";
import { FieldError } from "../../dashboard/components";
import { fieldOf, fieldsOf } from "./test-send";

// The pieces of a template on the Templates page. Every text of a template comes from the
// operator (a business's own words): it is only ever rendered as JSX text, which escapes it.

/** How each review state reads: only APPROVED can be sent; PAUSED and PENDING may come back. */
const STATUS_TONE: Record<string, "ok" | "warn" | "bad"> = {
  APPROVED: "ok",
  PENDING: "warn",
  IN_APPEAL: "warn",
  PAUSED: "warn",
  LIMIT_EXCEEDED: "warn",
};

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge ${STATUS_TONE[status] ?? "bad"}`}>{status}</span>;
}

const PLACEHOLDER = /(\{\{\s*[A-Za-z0-9_]+\s*\}\})/;

/** A text with its placeholders marked (the parts that a send fills in). */
function WithPlaceholders({ text }: { text: string }) {
  return (
    <>{text.split(PLACEHOLDER).map((part, i) => (i % 2 === 1 ? <mark class="placeholder">{part}</mark> : part))}</>
  );
}

/** The template as its recipient reads it, placeholders unfilled: header, body, footer and buttons. */
export function TemplatePreview({ t }: { t: StoredTemplate }) {
  const { header, body, footer, buttons } = t.spec;
  return (
    <div class="template-preview">
      {header ? (
        <p class="template-header">
          {header.format === "TEXT" ? (
            <WithPlaceholders text={header.text ?? ""} />
          ) : (
            <span class="hint">[{header.format.toLowerCase()} header: a link given with each send]</span>
          )}
        </p>
      ) : null}
      <p class="message-body">
        <WithPlaceholders text={body.text} />
      </p>
      {footer ? <p class="hint">{footer}</p> : null}
      {buttons.length > 0 ? (
        <ul class="template-buttons" aria-label="Buttons">
          {buttons.map((b) => (
            <li>
              <span class="badge">{b.type}</span> {b.text}
              {b.url ? (
                <>
                  {" "}
                  <code>
                    <WithPlaceholders text={b.url} />
                  </code>
                </>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** A stand-in value for a placeholder in the example request: says which value goes there. */
const valueFor = (placeholder: string) => `value of {{${placeholder}}}`;

/** The request body of `POST /api/v2/messages` that sends `t` from `channelNumberId`, with stand-in values. */
export function exampleRequest(t: StoredTemplate, channelNumberId: string) {
  const { header, body, buttons } = t.spec;
  const parameters: TemplateParameters = {};
  if (header !== null && header.format !== "TEXT")
    parameters.header = { link: `https://example.com/${header.format.toLowerCase()}` };
  else if (header !== null && header.params[0] !== undefined) parameters.header = valueFor(header.params[0]);
  if (body.params.length > 0)
    parameters.body =
      t.parameterFormat === "NAMED"
        ? Object.fromEntries(body.params.map((p) => [p, valueFor(p)]))
        : body.params.map(valueFor);
  const urlButtons = buttons.filter((b) => b.params.length > 0);
  if (urlButtons.length > 0) parameters.buttons = urlButtons.map((b) => ({ index: b.index, value: valueFor("1") }));
  return {
    channelNumberId,
    to: "5511999998888",
    type: "template",
    template: {
      name: t.name,
      language: t.language,
      ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
    },
  };
}

/** The exact JSON to send the template, with a copy button (shown with JavaScript). */
export function SendJson({ t, channelNumberId, id }: { t: StoredTemplate; channelNumberId: string; id: string }) {
  const json = JSON.stringify(exampleRequest(t, channelNumberId), null, 2);
  return (
    <details>
      <summary>JSON to send it</summary>
      <p class="hint">
        The body of <code>POST /api/v2/messages</code> (with an <code>Idempotency-Key</code> header): replace{" "}
        <code>to</code> and the values.
      </p>
      <pre class="message-body" id={id}>
        <code>{json}</code>
      </pre>
      <button
        type="button"
        class="small"
        data-copy-text={json}
        aria-label={`Copy the JSON of ${t.name} (${t.language})`}
        hidden
      >
        Copy
      </button>
    </details>
  );
}

/** A refused test send of one template: the values typed, each error beside its field, and the key to reuse. */
export interface TestFormState {
  key: string;
  values: Record<string, string>;
  fieldErrors: Record<string, string>;
  message: string;
  idempotencyKey: string;
}

function labelOf(t: StoredTemplate, field: string): string {
  if (field === fieldOf.to) return "Recipient";
  if (field === fieldOf.header)
    return t.spec.header?.format === "TEXT" ? `Header {{${t.spec.header.params[0] ?? "1"}}}` : "Header media link";
  const button = /^button_(\d+)$/.exec(field);
  if (button) return `Button ${button[1]} URL {{1}}`;
  return `Body {{${field.slice("body_".length)}}}`;
}

/** The "send a test" form of one approved template (developers and owners). */
export function TestSendForm({
  t,
  numberId,
  prefix,
  state,
}: {
  t: StoredTemplate;
  numberId: string;
  /** Makes the form's ids unique on the page. */
  prefix: string;
  state: TestFormState | undefined;
}) {
  const id = (field: string) => `${prefix}-${field}`;
  return (
    <details open={state !== undefined}>
      <summary>Send a test</summary>
      <form method="post" action={`/dashboard/numbers/${numberId}/templates/test`} class="stack">
        {state ? (
          <p class="form-error" role="alert">
            {state.message}
          </p>
        ) : null}
        <input type="hidden" name="name" value={t.name} />
        <input type="hidden" name="language" value={t.language} />
        <input type="hidden" name="idempotencyKey" value={state?.idempotencyKey ?? crypto.randomUUID()} />
        {fieldsOf(t).map((field) => {
          const error = state?.fieldErrors[field];
          return (
            <p>
              <label for={id(field)}>{labelOf(t, field)}</label>
              <input
                id={id(field)}
                name={field}
                type={field === fieldOf.header && t.spec.header?.format !== "TEXT" ? "url" : "text"}
                required
                autocomplete="off"
                spellcheck={false}
                {...(field === fieldOf.to ? { inputmode: "numeric", placeholder: "5511999998888" } : {})}
                value={state?.values[field] ?? ""}
                aria-invalid={error ? "true" : undefined}
                aria-describedby={error ? `${id(field)}-error` : undefined}
              />
              {field === fieldOf.to ? <span class="hint">E.164 digits without '+'.</span> : null}
              <FieldError field={id(field)} message={error} />
            </p>
          );
        })}
        <button type="submit">Send the test</button>
      </form>
    </details>
  );
}
