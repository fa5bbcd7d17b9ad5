// `npm run test:e2e`: the dashboard in a real Chromium against `wrangler dev`.
// One wrangler and one browser for the whole run; each flow has its own
// workspace and browser contexts.
import { after, before, test } from "node:test";
import { startHarness } from "./harness.mjs";
import { apiKeyFlow } from "./flows/api-key.mjs";
import { webhookFlow } from "./flows/webhook.mjs";
import { viewerFlow } from "./flows/viewer.mjs";
import { messagesFlow } from "./flows/messages.mjs";
import { connectNumberFlow } from "./flows/connect-number.mjs";
import { templatesFlow } from "./flows/templates.mjs";
import { richMessagesFlow } from "./flows/rich-messages.mjs";
import { layoutFlow } from "./flows/layout.mjs";

/** @type {import("./harness.mjs").Harness | undefined} */
let h;
/** The harness, once `before` started it. */
const harness = () => {
  if (!h) throw new Error("the harness did not start");
  return h;
};
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.stop();
});

test("invitation, sign-in, an API key shown once, working, then revoked", { timeout: 120_000 }, () =>
  apiKeyFlow(harness()),
);
test("a webhook to a loopback receiver gets a signed test event, logged as delivered", { timeout: 120_000 }, () =>
  webhookFlow(harness()),
);
test("a viewer sees no controls, forged posts change nothing", { timeout: 120_000 }, () => viewerFlow(harness()));
test("a message sent with a dashboard key is listed, filtered, and its page shows it sent", { timeout: 120_000 }, () =>
  messagesFlow(harness()),
);
test("an owner connects a sandbox number; the list shows its id with a copy button", { timeout: 120_000 }, () =>
  connectNumberFlow(harness()),
);
test(
  "a developer copies a template's JSON and sends a test; refused beside its field, then sent",
  { timeout: 120_000 },
  () => templatesFlow(harness()),
);
test(
  "rich messages: test sends of media and buttons from a sandbox number; every kind's page fits 1,280 and 390 px",
  { timeout: 180_000 },
  () => richMessagesFlow(harness()),
);
test(
  "every list of a busy workspace: at 390 px no cell spills into its label column; at 1,280 px the audit log fits",
  { timeout: 180_000 },
  () => layoutFlow(harness()),
);
