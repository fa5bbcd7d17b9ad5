// ESLint (flat config): eslint's and typescript-eslint's recommended rules, without the
// type-checked ones so that a run stays fast. Formatting is Prettier's (npm run format).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

/** Names of values that must not be compared with ===: secrets, tokens, signatures, digests, hashes. */
const SECRET_NAME = "/(secret|token|signature|digest|hmac|hash)$/i";

export default defineConfig(
  {
    // Generated, vendored, installed and built files (as in .prettierignore).
    ignores: [
      "worker-configuration.d.ts",
      "sdk/src/generated/**",
      "public/static/docs/vendor/**",
      "**/node_modules/**",
      "**/.wrangler/**",
      "**/dist/**",
      "test-results/**",
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks a parameter or binding kept on purpose (`_ctx`, `{ requestId: _ignored, ...rest }`),
      // and a destructured name beside a rest element is how a field is left out of a copy.
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrorsIgnorePattern: "^_",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // A secret, a token, a signature or a hash is compared in constant time (lib/crypto.ts's
    // timingSafeEqualStrings, crypto.subtle.timingSafeEqual), never with === or !==, whose time
    // says how long a prefix matched. Name such values for what they are and this rule holds them;
    // a comparison with a literal (null, a kind's name) or of a typeof stays allowed.
    files: ["src/**/*.ts", "src/**/*.tsx"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: `BinaryExpression[operator=/^[!=]==?$/]:not(:has(> Literal)):not(:has(> UnaryExpression[operator="typeof"])):matches(:has(> Identifier[name=${SECRET_NAME}]), :has(> MemberExpression > Identifier.property[name=${SECRET_NAME}]))`,
          message:
            "Compare secrets, tokens, signatures and hashes in constant time (timingSafeEqualStrings in src/lib/crypto.ts), not with ===/!==.",
        },
      ],
    },
  },
  {
    // The Node scripts, their tests and the configs run in Node.
    files: ["**/*.mjs", "**/vitest.config.ts", "bench/vitest.cost.config.ts", "test/node/**"],
    languageOptions: { globals: globals.node },
  },
  {
    // The end-to-end flows drive Chromium from Node: page.evaluate callbacks run in the page.
    files: ["e2e/**"],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    // The dashboard's and the reference page's scripts are classic browser scripts; the reference
    // page loads the vendored Swagger UI bundle (its global SwaggerUIBundle) before its own script.
    files: ["public/**/*.js"],
    languageOptions: { sourceType: "script", globals: { ...globals.browser, SwaggerUIBundle: "readonly" } },
  },
  {
    // The cost meter wraps runtime prototypes' methods in `function (this: …)` wrappers that need
    // both the patched object's `this` and the meter's: aliasing `this` is the point there.
    files: ["bench/cost/meter.ts"],
    rules: { "@typescript-eslint/no-this-alias": "off" },
  },
);
