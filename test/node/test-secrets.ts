// Fixed secrets for tests only (never used outside them), shared by the suite's and the cost
// harness's vitest configs. Also given to wrangler's config reader through the environment, so
// that it finds the `[secrets] required` names and prints no "Missing required secrets" warning.
export const TEST_SECRETS = {
  ADMIN_TOKEN: "test-admin-token-0123456789abcdef",
  CREDENTIALS_ENCRYPTION_KEY: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
  JOB_ID_SECRET: "test-job-id-secret",
  UPSTREAM_APP_SECRET: "test-upstream-app-secret",
  UPSTREAM_VERIFY_TOKEN: "test-verify-token",
};
