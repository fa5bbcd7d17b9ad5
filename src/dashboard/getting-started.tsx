import type { ChannelNumberRow } from "../db/channel-numbers";

/**
 * The overview of a workspace that has sent nothing yet: the three steps from here to a first
 * message, with a send that can be pasted as it is (this deployment's address, the workspace's
 * first number, a fresh Idempotency-Key). The key itself is never on a page: `$API_KEY`.
 */
export function GettingStarted({ origin, number }: { origin: string; number: ChannelNumberRow | undefined }) {
  const body = JSON.stringify({
    channelNumberId: number?.id ?? "<channelNumberId>",
    to: "5511999998888",
    text: { body: "Hello!" },
  });
  const curl = [
    `curl -s -X POST ${origin}/api/v1/messages \\`,
    `  -H "Authorization: Bearer $API_KEY" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -H "Idempotency-Key: ${crypto.randomUUID()}" \\`,
    `  -d '${body}'`,
  ].join("\n");
  return (
    <section aria-labelledby="start-heading" class="card">
      <h2 id="start-heading">Send your first message</h2>
      <ol>
        <li>
          <a href="/dashboard/api-keys">Create an API key</a> and set it as <code>API_KEY</code> in your shell.
        </li>
        <li>
          Send (a new <code>Idempotency-Key</code> for every message; repeating one sends nothing again):
          <pre class="message-body">{curl}</pre>
          {number?.upstream_type === "sandbox" ? (
            <p class="hint">
              A sandbox number holds sends to the 24-hour window as the operator does: the recipient must have written
              in the last 24 hours or be a test contact (<code>POST /api/v1/sandbox/test-contacts</code>, see the API
              guide's "Sandbox").
            </p>
          ) : null}
        </li>
        <li>
          Follow it on <a href="/dashboard/messages">Messages</a>, or at <a href="/docs">the API reference</a>.
        </li>
      </ol>
    </section>
  );
}
