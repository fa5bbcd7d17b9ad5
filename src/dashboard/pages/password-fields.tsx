import { PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS } from "../../domain/members";
import { FieldError } from "../components";

/** The new-password and confirmation fields of the invitation and account pages. */
export function NewPasswordFields({ errors }: { errors: Record<string, string> }) {
  return (
    <>
      <label for="password">New password</label>
      <input
        id="password"
        name="password"
        type="password"
        autocomplete="new-password"
        required
        minlength={PASSWORD_MIN_CHARS}
        maxlength={PASSWORD_MAX_CHARS}
        aria-describedby={errors.password ? "password-error password-hint" : "password-hint"}
        aria-invalid={errors.password ? "true" : undefined}
      />
      <p class="hint" id="password-hint">
        At least {PASSWORD_MIN_CHARS} characters. A passphrase of a few unrelated words works well.
      </p>
      <FieldError field="password" message={errors.password} />
      <label for="confirm">Repeat the new password</label>
      <input
        id="confirm"
        name="confirm"
        type="password"
        autocomplete="new-password"
        required
        maxlength={PASSWORD_MAX_CHARS}
        aria-describedby={errors.confirm ? "confirm-error" : undefined}
        aria-invalid={errors.confirm ? "true" : undefined}
      />
      <FieldError field="confirm" message={errors.confirm} />
    </>
  );
}

/** Field errors of a new password, or null when it is acceptable. */
export function checkNewPassword(fields: Record<string, string>): Record<string, string> | null {
  const password = fields.password ?? "";
  const length = [...password].length;
  if (length < PASSWORD_MIN_CHARS) return { password: `Use at least ${PASSWORD_MIN_CHARS} characters.` };
  if (length > PASSWORD_MAX_CHARS) return { password: `Use at most ${PASSWORD_MAX_CHARS} characters.` };
  if (password !== (fields.confirm ?? "")) return { confirm: "The two passwords differ." };
  return null;
}
