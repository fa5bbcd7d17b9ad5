import type { WebhookEvent } from "../../src/messages/events";
import type { WorkspaceDurableObject } from "../../src/durable-objects/workspace/workspace";
import { env } from "cloudflare:workers";
import { answerAtEdge } from "./edge";
import { admin, json } from "./http";
import { createKey, createWorkspace } from "./fixtures";
import { eventsOfMessage } from "./events";

export interface OperatorCall {
  at: number;
  url: string;
  auth: string | null;
  body: {
    /** '+' and the digits; absent for a send to a user id (then `recipient`). */
    to: string;
    recipient?: string;
    text: { body: string };
    /** A template message's (then there is no `text`). */
    template?: { name: string; language: { code: string }; components: Record<string, unknown>[] };
    biz_opaque_callback_data: string;
    messaging_product: string;
    recipient_type: string;
    type: string;
  };
}

type Reply = (call: OperatorCall, index: number) => Response | Promise<Response>;

export const operatorMessagesUrl = (phoneNumberId: string) =>
  `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/${phoneNumberId}/messages`;

/** A call at the operator as its fakes record it (the body read). */
export const operatorCallOf = async (req: Request): Promise<OperatorCall> => ({
  at: Date.now(),
  url: req.url,
  auth: req.headers.get("authorization"),
  body: await req.json<OperatorCall["body"]>(),
});

/**
 * Mocks the operator's API at the network edge (./edge.ts), until vi.restoreAllMocks(). Any
 * other outbound request fails the test.
 */
export function mockOperator(reply: Reply): OperatorCall[] {
  const calls: OperatorCall[] = [];
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`))
      throw new Error(`unexpected outbound request: ${req.url}`);
    const call = await operatorCallOf(req);
    calls.push(call);
    return reply(call, calls.length - 1);
  });
  return calls;
}

export const accepted = (id: string) => Response.json({ messaging_product: "whatsapp", messages: [{ id }] });
export const operatorError = (status: number, code: number, message = "error") =>
  Response.json({ error: { code, message, type: "OAuthException" } }, { status });

/** The operator's answer to the connect-time check of a number (`GET /{version}/{phoneNumberId}?fields=…`). */
export const operatorNumberUrl = (phoneNumberId: string) =>
  `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/${phoneNumberId}?fields=id,display_phone_number`;

/**
 * The operator confirms that `phoneNumberId` is one of its numbers (the connect-time check), to
 * calls with `token` (any token when none is given), at the network edge over whatever answers
 * there. Returns its removal.
 */
export function operatorConfirmsNumber(
  phoneNumberId: string,
  opts: { token?: string; displayPhoneNumber?: string } = {},
): () => void {
  return answerAtEdge((input, init) => {
    const req = new Request(input, init);
    const mine =
      req.method === "GET" &&
      req.url === operatorNumberUrl(phoneNumberId) &&
      (opts.token === undefined || req.headers.get("authorization") === `Bearer ${opts.token}`);
    return mine
      ? Response.json({ id: phoneNumberId, display_phone_number: opts.displayPhoneNumber ?? "+1 555-777-0000" })
      : undefined;
  });
}

/**
 * Connects a live number. The operator's verification call is answered at the network edge while
 * the admin call runs (every other request goes to what answers there: a test's own mockOperator
 * included).
 */
export async function connectLiveNumber(
  workspaceId: string,
): Promise<{ numberId: string; phoneNumberId: string; token: string }> {
  const phoneNumberId = String(100000000000 + Math.floor(Math.random() * 899999999999));
  const token = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
  const confirming = operatorConfirmsNumber(phoneNumberId, { token });
  let res: Response;
  try {
    res = await admin(`/workspaces/${workspaceId}/channel-numbers`, {
      method: "POST",
      json: { displayPhoneNumber: "15557770000", upstream: { type: "cloud", phoneNumberId, accessToken: token } },
    });
  } finally {
    confirming();
  }
  if (res.status !== 201) throw new Error(`live number: ${res.status} ${await res.text()}`);
  return { numberId: (await json<{ id: string }>(res)).id, phoneNumberId, token };
}

/** A pro workspace with an API key and one live number (its connect-time check answered here). */
export async function liveNumberTenant(opts: { monthlyMessageQuota?: number } = {}) {
  const workspaceId = await createWorkspace({ plan: "pro", ...opts });
  const { key } = await createKey(workspaceId);
  const number = await connectLiveNumber(workspaceId);
  return { workspaceId, key, ...number };
}

/**
 * The events a message's record determines, oldest first: one per change it went through, each
 * "as of" its change, with the id its publication carried (events are not stored: the workspace
 * rebuilds them from the record, and so does this, with its functions). To see what was actually
 * published, and how often, capture the queue (`queuedEvents` in ./events).
 */
export async function recordedEvents(
  stub: DurableObjectStub<WorkspaceDurableObject>,
  subject: string,
): Promise<WebhookEvent[]> {
  const workspaceId = stub.id.name;
  if (workspaceId === undefined) throw new Error("recordedEvents: a workspace stub by name (workspaceStub) is needed");
  return eventsOfMessage(workspaceId, subject);
}

/** A business account at the operator, as the connect flow sees it: one number, one token, and how each call answers. */
export interface FakeAccount {
  phoneNumberId: string;
  wabaId: string;
  token: string;
  profile: {
    display_phone_number: string;
    verified_name: string;
    quality_rating: string;
    messaging_limit_tier: string;
  };
  /** Answer of `POST /{waba-id}/subscribed_apps` (default: success). */
  subscribe: () => Response;
  /** Every call the fake answered ("METHOD path"), in order. */
  calls: string[];
  /** Removes the fake (vi.restoreAllMocks() removes it too, with the whole edge). */
  restore(): void;
}

const operatorPath = (url: string): string | null => {
  const prefix = `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/`;
  return url.startsWith(prefix) ? url.slice(prefix.length) : null;
};

/**
 * Fakes the operator's account calls of the connect flow at the network edge:
 * the number's record (`GET /{id}?fields=…`), the account's numbers
 * (`GET /{waba}/phone_numbers`) and the webhook subscription
 * (`POST /{waba}/subscribed_apps`), all answering only `token`, at the network
 * edge (./edge.ts). Any other request goes to what answers there (a mockNetwork
 * included).
 */
export function fakeOperatorAccount(overrides: Partial<Pick<FakeAccount, "profile" | "subscribe">> = {}): FakeAccount {
  const account: FakeAccount = {
    phoneNumberId: String(100000000000 + Math.floor(Math.random() * 899999999999)),
    wabaId: String(200000000000 + Math.floor(Math.random() * 799999999999)),
    token: `EAAG${crypto.randomUUID().replaceAll("-", "")}`,
    profile: {
      display_phone_number: "+1 555-777-0000",
      verified_name: "Acme Shop",
      quality_rating: "GREEN",
      messaging_limit_tier: "TIER_1K",
    },
    subscribe: () => Response.json({ success: true }),
    calls: [],
    restore: () => undefined,
    ...overrides,
  };
  account.restore = answerAtEdge((input, init) => {
    const req = new Request(input, init);
    const path = operatorPath(req.url);
    const [route] = (path ?? "").split("?");
    // The account's templates (read once a number is connected): none, unless a test fakes them
    // (test/helpers/operator-templates.ts, installed after this fake). Not a call of the connect flow's own.
    if (req.method === "GET" && route === `${account.wabaId}/message_templates`)
      return Response.json({ data: [], paging: { cursors: {} } });
    const mine =
      route === account.phoneNumberId ||
      route === `${account.wabaId}/phone_numbers` ||
      route === `${account.wabaId}/subscribed_apps`;
    if (!path || !mine) {
      // Another account's ids (a wrong WABA, say) are the operator's "unknown object" for this token.
      if (path && /^\d+(\/(phone_numbers|subscribed_apps))?$/.test(route ?? "")) {
        account.calls.push(`${req.method} ${route}`);
        return operatorError(
          400,
          100,
          "Unsupported request - object does not exist or cannot be loaded due to missing permissions",
        );
      }
      return undefined;
    }
    account.calls.push(`${req.method} ${route}`);
    if (req.headers.get("authorization") !== `Bearer ${account.token}`)
      return operatorError(401, 190, "Error validating access token");
    if (route === account.phoneNumberId) return Response.json({ id: account.phoneNumberId, ...account.profile });
    if (route === `${account.wabaId}/phone_numbers`) return Response.json({ data: [{ id: account.phoneNumberId }] });
    return account.subscribe();
  });
  return account;
}

/**
 * Fake operator accounts made by a test file, removed together after each test
 * (`afterEach(accounts.restoreAll)`).
 */
export function fakeAccounts() {
  let made: FakeAccount[] = [];
  return {
    account: (overrides?: Parameters<typeof fakeOperatorAccount>[0]): FakeAccount => {
      const a = fakeOperatorAccount(overrides);
      made.push(a);
      return a;
    },
    restoreAll: (): void => {
      for (const a of made.reverse()) a.restore();
      made = [];
    },
  };
}

/** The connect body of a live number of `account` (for `POST /channel-numbers` and the dashboard form). */
export const liveConnectBody = (a: Pick<FakeAccount, "phoneNumberId" | "wabaId" | "token">) => ({
  type: "cloud" as const,
  phoneNumberId: a.phoneNumberId,
  wabaId: a.wabaId,
  accessToken: a.token,
});
