import { FieldError } from "../../dashboard/components";

/** What a refused form gets back: the values typed (never the token) and the error beside its field. */
export interface FormState {
  values?: Record<string, string>;
  field?: string;
  error?: string;
}

function Field({
  name,
  label,
  form,
  type = "text",
  hint,
}: {
  name: string;
  label: string;
  form: FormState;
  type?: string;
  hint?: string;
}) {
  const invalid = form.field === name;
  return (
    <p>
      <label for={name}>{label}</label>
      <input
        id={name}
        name={name}
        type={type}
        required
        autocomplete="off"
        spellcheck={false}
        value={type === "password" ? "" : (form.values?.[name] ?? "")}
        aria-invalid={invalid ? "true" : undefined}
        aria-describedby={invalid ? `${name}-error` : undefined}
      />
      {hint ? <span class="hint">{hint}</span> : null}
      <FieldError field={name} message={invalid ? form.error : undefined} />
    </p>
  );
}

/** The owners' "Connect a number" section of the Numbers page: a sandbox number, or a live one. */
export function ConnectForms({ form, kind }: { form: FormState; kind: "sandbox" | "cloud" | null }) {
  const none: FormState = {};
  return (
    <section aria-labelledby="connect-heading" class="card">
      <h2 id="connect-heading">Connect a number</h2>
      {form.error && !form.field ? (
        <p class="form-error" role="alert">
          {form.error}
        </p>
      ) : null}
      <h3>Sandbox number</h3>
      <p class="hint">Instant; delivers nowhere. For building and testing an integration.</p>
      <form method="post" action="/dashboard/numbers" class="row">
        <input type="hidden" name="type" value="sandbox" />
        <Field
          name="displayPhoneNumber"
          label="Display number"
          form={kind === "sandbox" ? form : none}
          hint="Digits, optionally with a leading +."
        />
        <button type="submit">Connect sandbox number</button>
      </form>
      <h3>Live number (Cloud API)</h3>
      <p class="hint">
        We check with the operator that the token controls the number and its business account, and subscribe to the
        account's webhooks, before anything is stored. The token is stored encrypted and never shown again.
      </p>
      <form method="post" action="/dashboard/numbers">
        <input type="hidden" name="type" value="cloud" />
        <Field name="phoneNumberId" label="Phone number id" form={kind === "cloud" ? form : none} />
        <Field name="wabaId" label="Business account (WABA) id" form={kind === "cloud" ? form : none} />
        <Field name="accessToken" label="Access token" type="password" form={kind === "cloud" ? form : none} />
        <button type="submit">Verify and connect</button>
      </form>
    </section>
  );
}

/** The owners' token replacement form of a live number's page. */
export function ReplaceTokenForm({ numberId, form }: { numberId: string; form: FormState }) {
  return (
    <form method="post" action={`/dashboard/numbers/${numberId}/token`}>
      <Field
        name="accessToken"
        label="New access token"
        type="password"
        form={form}
        hint="Verified with the operator before it replaces the current one."
      />
      <button type="submit">Replace token</button>
    </form>
  );
}
