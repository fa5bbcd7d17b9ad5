import type { TestContactRow } from "../../db/sandbox-test-contacts";
import { MAX_TEST_CONTACTS_PER_NUMBER } from "./test-contacts";
import { FieldError, Time } from "../../dashboard/components";
import type { FormState } from "../numbers/number-forms";

/**
 * A sandbox number's test contacts on its page: the list for everyone, the add and remove
 * forms for developers and owners (`canWrite`). `form` re-renders a refused add with its error.
 */
export function TestContacts({
  numberId,
  contacts,
  canWrite,
  form,
}: {
  numberId: string;
  contacts: TestContactRow[];
  canWrite: boolean;
  form: FormState;
}) {
  const invalid = form.field === "phone";
  return (
    <section aria-labelledby="test-contacts-heading" class="card">
      <h2 id="test-contacts-heading">Test contacts</h2>
      <p>
        Like the operator, this sandbox number sends free-form text only to a recipient who wrote to it in the last 24
        hours; other recipients end <code>failed</code> with <code>service_window_closed</code>. Its test contacts are
        sent to whatever the window (at most {MAX_TEST_CONTACTS_PER_NUMBER}; {contacts.length} marked).
      </p>
      {contacts.length === 0 ? (
        <p>No test contact yet.</p>
      ) : (
        <ul class="test-contacts">
          {contacts.map((t) => (
            <li>
              <code>{t.phone}</code>{" "}
              <span class="hint">
                since <Time iso={t.created_at} />
              </span>
              {canWrite ? (
                <>
                  {" "}
                  <form
                    method="post"
                    action={`/dashboard/numbers/${numberId}/test-contacts/${t.phone}/remove`}
                    class="inline"
                  >
                    <button type="submit" class="small" aria-label={`Remove ${t.phone}`}>
                      Remove
                    </button>
                  </form>
                </>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      {canWrite ? (
        <form method="post" action={`/dashboard/numbers/${numberId}/test-contacts`} class="row">
          <p>
            <label for="phone">Add a test contact</label>
            <input
              id="phone"
              name="phone"
              type="text"
              inputmode="numeric"
              required
              autocomplete="off"
              spellcheck={false}
              placeholder="5511999998888"
              value={form.values?.phone ?? ""}
              aria-invalid={invalid ? "true" : undefined}
              aria-describedby={invalid ? "phone-error" : undefined}
            />
            <span class="hint">E.164 digits without '+'.</span>
            <FieldError field="phone" message={invalid ? form.error : undefined} />
          </p>
          <button type="submit">Add</button>
        </form>
      ) : (
        <p class="hint">Developers and owners of the workspace can add and remove test contacts.</p>
      )}
    </section>
  );
}
