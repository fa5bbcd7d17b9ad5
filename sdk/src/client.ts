import createClient from "openapi-fetch";
import type { components, operations, paths } from "./generated/openapi.js";
import { Paginated } from "./paginate.js";
import { DEFAULT_RETRY, once, type RetryOptions } from "./retry.js";
import { verifyWebhook, type WebhookEvent, type WebhookHeaders } from "./webhooks.js";
import { MessagingClientV2 } from "./v2.js";
import { Calls } from "./calls.js";

type Schemas = components["schemas"];
/** An outbound or an inbound message: narrow on `direction`. */
export type Message = Schemas["Message"];
export type OutboundMessage = Schemas["OutboundMessage"];
export type InboundMessage = Schemas["InboundMessage"];
/** An inbound message's file (images, audio, video, documents, stickers): `InboundMessage["media"]`. */
export type InboundMedia = NonNullable<Schemas["InboundMedia"]>;
/** A message's status timeline and the deliveries of its webhook events. */
export type MessageEvents = Schemas["MessageEvents"];
export type MessageTimelineEntry = Schemas["MessageTimelineEntry"];
/** One archived day: `GET /message-archives`. */
export type MessageArchive = Schemas["MessageArchive"];
export type SendMessageInput = Schemas["SendMessageRequest"];
export type ChannelNumber = Schemas["ChannelNumber"];
/** A number with its sending state and health: `channelNumbers.get`, `connect` and `replaceToken`. */
export type ChannelNumberDetail = Schemas["ChannelNumberDetail"];
export type ConnectChannelNumberInput = Schemas["ConnectChannelNumberRequest"];
export type ContactWindow = Schemas["ContactWindow"];
export type Webhook = Schemas["Webhook"];
export type WebhookWithSecret = Schemas["ConfigureWebhookResponse"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type Usage = Schemas["Usage"];
export type Me = Schemas["Me"];
export type ListParams = NonNullable<operations["listWebhooks"]["parameters"]["query"]>;
/** Filters of `messages.list` (combined with AND), `limit` (the page size) and a starting `cursor`. */
export type MessageListParams = NonNullable<operations["listMessages"]["parameters"]["query"]>;

export interface SendResult {
  jobId: string;
  /** `created`, or `duplicado_identico` when this key had already been accepted: nothing was sent again. */
  status: "created" | "duplicado_identico";
  /** The key the send went out with (yours, or the one generated for you): keep it to retry later. */
  idempotencyKey: string;
}

/** An inbound message's media as `messages.media` answers it: the bytes as they arrive, and what they are. */
export interface MessageMedia {
  /** The file, streamed: read it to the end (or `cancel()` it) to free the connection. */
  body: ReadableStream<Uint8Array>;
  /** `Content-Type`: the file's MIME type. */
  contentType: string;
  /** `Content-Length` in bytes, when the server sent it. */
  size: number | null;
  /** The file name of `Content-Disposition` (the sender's, for documents), or null. */
  filename: string | null;
}

export interface ClientOptions {
  /** An API key, `msg_live_…`. */
  apiKey: string;
  /** The deployment, e.g. `https://messaging.example.com` (`/api/v1` is added unless present; `client.v2` uses `/api/v2`). */
  baseUrl: string;
  /** Defaults to the global fetch: pass one for tests, proxies or instrumentation. */
  fetch?: (request: Request) => Promise<Response>;
  /** Retry policy of sends and reads; see RetryOptions for the defaults. */
  retry?: Partial<RetryOptions>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

const apiRoot = (baseUrl: string) => {
  const trimmed = baseUrl.replace(/\/+$/, "");
  return trimmed.endsWith("/api/v1") ? trimmed : `${trimmed}/api/v1`;
};

/**
 * A client of the Messaging API. Sends are safe to retry: each gets one Idempotency-Key,
 * reused on every attempt. Reads are retried the same way; other writes are sent once.
 */
export class MessagingClient {
  private readonly http: ReturnType<typeof createClient<paths>>;
  private readonly retry: RetryOptions;
  private readonly calls: Calls;
  /** API v2 (`/api/v2`): template messages and templates; the same key, fetch and retry policy. */
  readonly v2: MessagingClientV2;

  constructor(options: ClientOptions) {
    if (!options.apiKey) throw new TypeError("apiKey is required");
    const userFetch = options.fetch;
    this.http = createClient<paths>({
      baseUrl: apiRoot(options.baseUrl),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      ...(userFetch ? { fetch: (request: Request) => userFetch(request) } : {}),
    });
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.calls = new Calls(this.retry);
    this.v2 = new MessagingClientV2(
      { apiKey: options.apiKey, baseUrl: options.baseUrl, ...(userFetch ? { fetch: userFetch } : {}) },
      this.retry,
    );
  }

  readonly messages = {
    /**
     * Queues a text message. Without `idempotencyKey`, a new UUID is generated; either way
     * the same key goes out on every retry, so a send is never duplicated by retrying.
     */
    send: async (
      input: SendMessageInput,
      options: CallOptions & { idempotencyKey?: string } = {},
    ): Promise<SendResult> =>
      this.calls.send(
        (idempotencyKey, signal) =>
          this.http.POST("/messages", {
            params: { header: { "idempotency-key": idempotencyKey } },
            body: input,
            signal,
          }),
        options,
      ),
    get: (id: string, options?: CallOptions): Promise<Message> =>
      this.calls.read((signal) => this.http.GET("/messages/{id}", { params: { path: { id } }, signal }), options),
    /**
     * Messages, outbound and inbound, newest first, over every page. A page can hold fewer
     * than `limit` messages (even none) while more exist: the iteration follows `nextCursor`
     * until it is null, so a short page never ends it.
     */
    list: (params: MessageListParams = {}, options?: CallOptions): Paginated<Message> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/messages", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /** The message's status timeline, oldest first, and the deliveries of its webhook events. */
    events: (id: string, options?: CallOptions): Promise<MessageEvents> =>
      this.calls.read(
        (signal) => this.http.GET("/messages/{id}/events", { params: { path: { id } }, signal }),
        options,
      ),
    /**
     * The file of an inbound image, audio, video, document or sticker, as a stream (never held in
     * memory whole), with its type, size and name. Retried like other reads until the answer
     * arrives (a message without media, or media not kept, throws `ApiError` 404 saying why); the
     * body itself is not: pass a `signal` to bound the download.
     */
    media: (id: string, options?: CallOptions): Promise<MessageMedia> => this.downloadMedia(id, options?.signal),
  };

  readonly messageArchives = {
    /** Days older than the plan's history window, archived, newest first. */
    list: (params: ListParams = {}, options?: CallOptions): Paginated<MessageArchive> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/message-archives", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /**
     * The messages of one archived day (`YYYY-MM-DD`, UTC), oldest first, parsed line by line
     * as the download streams in. Nothing is requested until iteration starts. The request is
     * retried like other reads (an unknown day throws `ApiError` 404); a download that breaks
     * off half-way throws `ConnectionError` and starts over when iterated again. The retry
     * deadline bounds the wait for the answer, not the download: pass a `signal` to bound it.
     */
    download: (day: string, options?: CallOptions): AsyncIterable<Message> => ({
      [Symbol.asyncIterator]: () =>
        this.calls.lines<Message>(
          (request) =>
            this.http.GET("/message-archives/{day}", { params: { path: { day } }, parseAs: "stream", signal: request }),
          options?.signal,
        ),
    }),
  };

  readonly channelNumbers = {
    list: (params: ListParams = {}, options?: CallOptions): Paginated<ChannelNumber> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/channel-numbers", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    get: (id: string, options?: CallOptions): Promise<ChannelNumberDetail> =>
      this.calls.read(
        (signal) => this.http.GET("/channel-numbers/{id}", { params: { path: { id } }, signal }),
        options,
      ),
    /**
     * Connects a sandbox number, or a live one once the operator verified it (the error's details name the
     * refused field). The access token is never returned. Sent once, never retried.
     */
    connect: (input: ConnectChannelNumberInput, options?: CallOptions): Promise<ChannelNumberDetail> =>
      once((signal) => this.http.POST("/channel-numbers", { body: input, signal }), options?.signal),
    /** Replaces a live number's access token after the operator confirmed it. Sent once, never retried. */
    replaceToken: (id: string, accessToken: string, options?: CallOptions): Promise<ChannelNumberDetail> =>
      once(
        (signal) =>
          this.http.PATCH("/channel-numbers/{id}", { params: { path: { id } }, body: { accessToken }, signal }),
        options?.signal,
      ),
    /** Disconnects a number: its queued messages end `failed` with `number_disconnected`. Sent once, never retried. */
    disconnect: async (id: string, options?: CallOptions): Promise<void> => {
      await once(
        (signal) => this.http.DELETE("/channel-numbers/{id}", { params: { path: { id } }, signal }),
        options?.signal,
      );
    },
    contactWindow: (id: string, phone: string, options?: CallOptions): Promise<ContactWindow> =>
      this.calls.read(
        (signal) =>
          this.http.GET("/channel-numbers/{id}/contacts/{phone}", { params: { path: { id, phone } }, signal }),
        options,
      ),
  };

  readonly webhooks = {
    list: (params: ListParams = {}, options?: CallOptions): Paginated<Webhook> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/webhooks", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /** Creates or replaces the webhook of a number; the returned `secret` is shown only here. Sent once, never retried. */
    configure: (input: Schemas["ConfigureWebhookRequest"], options?: CallOptions): Promise<WebhookWithSecret> =>
      once((signal) => this.http.POST("/webhooks", { body: input, signal }), options?.signal),
    listDeliveries: (webhookId: string, params: ListParams = {}, options?: CallOptions): Paginated<WebhookDelivery> =>
      this.calls.paged(
        params,
        (cursor, signal) =>
          this.http.GET("/webhooks/{id}/deliveries", {
            params: { path: { id: webhookId }, query: { ...params, cursor } },
            signal,
          }),
        options,
      ),
    replay: (webhookId: string, eventId: string, options?: CallOptions) =>
      once(
        (signal) =>
          this.http.POST("/webhooks/{id}/deliveries/{eventId}/replay", {
            params: { path: { id: webhookId, eventId } },
            signal,
          }),
        options?.signal,
      ),
    test: (webhookId: string, options?: CallOptions) =>
      once(
        (signal) => this.http.POST("/webhooks/{id}/test", { params: { path: { id: webhookId } }, signal }),
        options?.signal,
      ),
    /** Verifies a delivery's signature and returns its event; see `verifyWebhook`. */
    verify: (payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent =>
      verifyWebhook(payload, headers, secret),
  };

  readonly sandbox = {
    /** Sandbox numbers only: simulate a user writing to the number (a `message.received` event follows). */
    injectInbound: (input: Schemas["SandboxInboundRequest"], options?: CallOptions) =>
      once((signal) => this.http.POST("/sandbox/inbound", { body: input, signal }), options?.signal),
    /**
     * A sandbox number's test contacts: the recipients it sends free-form text to outside the 24-hour
     * window, as the operator's own test numbers allow (at most 10 per number).
     */
    testContacts: {
      list: (channelNumberId: string, options?: CallOptions): Promise<Schemas["SandboxTestContactList"]> =>
        this.calls.read(
          (signal) => this.http.GET("/sandbox/test-contacts", { params: { query: { channelNumberId } }, signal }),
          options,
        ),
      /** Marks a recipient (E.164 digits); adding one that already is changes nothing. Safe to retry. */
      add: (channelNumberId: string, phone: string, options?: CallOptions): Promise<Schemas["SandboxTestContact"]> =>
        this.calls.read(
          (signal) => this.http.POST("/sandbox/test-contacts", { body: { channelNumberId, phone }, signal }),
          options,
        ),
      remove: async (channelNumberId: string, phone: string, options?: CallOptions): Promise<void> => {
        await once(
          (signal) =>
            this.http.DELETE("/sandbox/test-contacts/{channelNumberId}/{phone}", {
              params: { path: { channelNumberId, phone } },
              signal,
            }),
          options?.signal,
        );
      },
    },
  };

  private async downloadMedia(id: string, signal: AbortSignal | undefined): Promise<MessageMedia> {
    const {
      data: body,
      response,
      download,
    } = await this.calls.streamed(
      (request) =>
        this.http.GET("/messages/{id}/media", { params: { path: { id } }, parseAs: "stream", signal: request }),
      signal,
    );
    signal?.addEventListener("abort", () => download.abort(signal.reason), { once: true });
    const length = response.headers.get("content-length");
    return {
      body: body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
      contentType: response.headers.get("content-type") ?? "application/octet-stream",
      size: length !== null && /^\d+$/.test(length) ? Number(length) : null,
      filename: filenameOf(response.headers.get("content-disposition")),
    };
  }

  me(options?: CallOptions): Promise<Me> {
    return this.calls.read((signal) => this.http.GET("/me", { signal }), options);
  }

  usage(options?: CallOptions): Promise<Usage> {
    return this.calls.read((signal) => this.http.GET("/usage", { signal }), options);
  }
}

/** The file name of a Content-Disposition header: its RFC 8187 `filename*` (exact), else `filename`. */
function filenameOf(header: string | null): string | null {
  if (!header) return null;
  const extended = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header)?.[1];
  if (extended) {
    try {
      return decodeURIComponent(extended.trim());
    } catch {
      // A malformed escape: fall back to the plain name.
    }
  }
  const plain = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header)?.[1] ?? /filename\s*=\s*([^;]+)/i.exec(header)?.[1];
  return plain ? plain.trim().replace(/\\(.)/g, "$1") : null;
}
