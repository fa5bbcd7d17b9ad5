import type { Child } from "hono/jsx";
import type { Flash } from "./flash";

/** A UTC timestamp, readable and machine-readable; "—" for none. `seconds` where they tell events apart (a message's timeline). */
export function Time({ iso, seconds = false }: { iso: string | null | undefined; seconds?: boolean }) {
  if (!iso) return <span>—</span>;
  return <time datetime={iso}>{`${iso.slice(0, 10)} ${iso.slice(11, seconds ? 19 : 16)} UTC`}</time>;
}

/** A secret shown once: read-only field, copy button (with JavaScript), and the warning. */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  return (
    <div class="secret" role="status">
      <label for="secret-value">{label}</label>
      <div class="copy-row">
        <input id="secret-value" type="text" readonly value={value} spellcheck={false} autocomplete="off" />
        <button type="button" data-copy="secret-value" hidden>
          Copy
        </button>
      </div>
      <p class="warning">Copy it now: you won't see it again.</p>
    </div>
  );
}

export function FlashMessage({ flash }: { flash: Flash | undefined }) {
  if (!flash) return null;
  if (flash.error) {
    return (
      <section class="flash flash-error" role="alert" aria-label="Error">
        <p>{flash.notice}</p>
      </section>
    );
  }
  return (
    <section class="flash" aria-label="Notice">
      <p>{flash.notice}</p>
      {flash.secret ? <SecretOnce label={flash.secret.label} value={flash.secret.value} /> : null}
    </section>
  );
}

/** A POST form for a destructive action: confirmed by a dialog with JavaScript, by a second page without. */
export function ConfirmForm({
  action,
  question,
  label,
  children,
}: {
  action: string;
  question: string;
  label: string;
  children?: Child;
}) {
  return (
    <form method="post" action={action} data-confirm={question} class="inline">
      <input type="hidden" name="confirmed" value="" />
      {children}
      <button type="submit" class="danger">
        {label}
      </button>
    </form>
  );
}

/** The error of one form field, tied to it with aria-describedby (`id` = `${field}-error`). */
export function FieldError({ field, message }: { field: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="field-error" id={`${field}-error`}>
      {message}
    </p>
  );
}

/** A field's ARIA state for `errors`: invalid, and described by its FieldError, when it has one. */
export const describedBy = <F extends string>(field: F, errors: Partial<Record<F, string>>) => ({
  "aria-invalid": errors[field] ? ("true" as const) : undefined,
  "aria-describedby": errors[field] ? `${field}-error` : undefined,
});

/** A list filter offered as a select (`options`: value and text), with its error beside it. */
export function Choice<F extends string>({
  field,
  label,
  options,
  values,
  errors,
}: {
  field: F;
  label: string;
  options: readonly (readonly [string, string])[];
  values: Partial<Record<F, string>>;
  errors: Partial<Record<F, string>>;
}) {
  return (
    <div class="field">
      <label for={`f-${field}`}>{label}</label>
      <select id={`f-${field}`} name={field} {...describedBy(field, errors)}>
        {options.map(([value, text]) => (
          <option value={value} selected={(values[field] ?? "") === value}>
            {text}
          </option>
        ))}
      </select>
      <FieldError field={field} message={errors[field]} />
    </div>
  );
}

/**
 * A wide table that scrolls sideways on a small screen; focusable, so that
 * keyboard users can scroll it too.
 */
export function TableScroll({ label, children }: { label: string; children: Child }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabindex={0}>
      {children}
    </div>
  );
}

/** An id with a copy button (shown with JavaScript): what a customer pastes into a request. */
export function CopyableId({ id, label }: { id: string; label: string }) {
  return (
    <span class="copy-id">
      <code>{id}</code>{" "}
      <button type="button" class="small" data-copy-text={id} aria-label={`Copy ${label}`} hidden>
        Copy
      </button>
    </span>
  );
}
