import createClient from "openapi-fetch";
import type { components, operations, paths } from "./generated/openapi-v2.js";
import type { Paginated } from "./paginate.js";
import { once, type RetryOptions } from "./retry.js";
import { Calls } from "./calls.js";
import { sendPaced, type PacedResult, type PacedSendOptions } from "./paced.js";

// API v2 (`/api/v2`): v1 plus template and rich messages, the templates a number can send, read marks and the
// media store. Typed from the v2 OpenAPI document (sdk/src/generated/openapi-v2.ts); the v1 client is unchanged.

type Schemas = components["schemas"];
/**
 * A v2 send: `type: "text"` with `text` (as in v1), `type: "template"` with `template`, or a rich
 * message's type with the object of that name (`messageV2.<kind>` builds each, typed by its kind).
 */
export type SendMessageInputV2 = Schemas["SendMessageRequestV2"];
/** The `template` of a template send: its name, language and parameters. */
export type TemplateContent = Schemas["TemplateContent"];
/**
 * A message as v2 reads it: an outbound one carries its `type` and, under the type's name, its object as
 * sent (a template message its `template` and rendered text; an image its `image` …), with `text.body` a
 * summary for what shows text only; `delivered` and `read` are statuses of their own. Narrow on `direction`.
 */
export type MessageV2 = Schemas["MessageV2"];
export type OutboundMessageV2 = Schemas["OutboundMessageV2"];
/** One language of a template of one of your numbers' business accounts (or a sandbox number's). */
export type Template = Schemas["Template"];
/** A template by name: each of its languages. */
export type TemplateDetail = Schemas["TemplateDetail"];
/** Filters of `v2.templates.list`, `limit` (the page size) and a starting `cursor`. */
export type TemplateListParams = NonNullable<operations["listTemplates"]["parameters"]["query"]>;
/** Filters of `v2.templates.get`: one number's, or one language. */
export type TemplateGetParams = NonNullable<operations["getTemplate"]["parameters"]["query"]>;
/** A user's message marked read: when, and whether the typing indicator was shown with it. */
export type ReadMark = Schemas["ReadMark"];
/** Options of `v2.messages.markRead`. */
export interface MarkReadOptions extends CallOptions {
  /** Also show the typing indicator, until your reply or for about 25 seconds: only when you are about to reply. */
  typing?: boolean;
}
/** A file of the workspace's media store: send it by its `id` (`mediaId`) until its `expiresAt`. */
export type Media = Schemas["Media"];
/** `limit` (the page size) and a starting `cursor` of `v2.media.list`. */
export type MediaListParams = NonNullable<operations["listMedia"]["parameters"]["query"]>;
/** Options of `v2.media.upload`. */
export interface MediaUploadOptions extends CallOptions {
  /** The file's type (`image/png` …); without it, the Blob's `type`. */
  contentType?: string;
  /** The name a document shows its recipient; without it, a `File`'s `name`. */
  filename?: string;
}
/** One archived day: `GET /api/v2/message-archives`. */
export type MessageArchiveV2 = Schemas["MessageArchive"];
/** `limit` (the page size) and a starting `cursor` of `v2.messageArchives.list`. */
export type ArchiveListParamsV2 = NonNullable<operations["listMessageArchives"]["parameters"]["query"]>;
/** Filters of `v2.messages.list`: v1's, plus `type`, with v2's statuses (`delivered`, `read`). */
export type MessageListParamsV2 = NonNullable<operations["listMessagesV2"]["parameters"]["query"]>;

interface CallOptions {
  signal?: AbortSignal;
}

export interface SendResultV2 {
  jobId: string;
  /** `created`, or `duplicado_identico` when this key had already been accepted: nothing was sent again. */
  status: "created" | "duplicado_identico";
  /** The key the send went out with (yours, or the one generated for you): keep it to retry later. */
  idempotencyKey: string;
}

/** The deployment's `/api/v2`, whatever version's root (or none) the base URL was given with. */
export const apiV2Root = (baseUrl: string): string =>
  `${baseUrl.replace(/\/+$/, "").replace(/\/api\/v[12]$/, "")}/api/v2`;

/** `client.v2`: built by MessagingClient with its key, fetch and retry policy. */
export class MessagingClientV2 {
  private readonly http: ReturnType<typeof createClient<paths>>;
  private readonly calls: Calls;
  private readonly retry: RetryOptions;

  constructor(
    options: { apiKey: string; baseUrl: string; fetch?: (request: Request) => Promise<Response> },
    retry: RetryOptions,
  ) {
    this.calls = new Calls(retry);
    this.retry = retry;
    const userFetch = options.fetch;
    this.http = createClient<paths>({
      baseUrl: apiV2Root(options.baseUrl),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      ...(userFetch ? { fetch: (request: Request) => userFetch(request) } : {}),
    });
  }

  readonly messages = {
    /**
     * Queues a text or template message. A template is checked before anything is queued: an
     * unknown name, language, an unapproved template or parameters that do not fit it throw
     * `ApiError` 400 (`template_…`, `details` naming each field). As in v1, one Idempotency-Key
     * (yours, or a generated UUID) goes out on every retry, so retrying never duplicates a send.
     */
    send: async (
      input: SendMessageInputV2,
      options: CallOptions & { idempotencyKey?: string } = {},
    ): Promise<SendResultV2> =>
      this.calls.send(
        (idempotencyKey, signal) =>
          this.http.POST("/messages", {
            params: { header: { "idempotency-key": idempotencyKey } },
            body: input,
            signal,
          }),
        options,
      ),
    /**
     * Sends a list of messages at the pace the API admits (2 a second per number, 1200 a minute per
     * workspace) instead of meeting the limits as 429s: each number's messages one after another in
     * list order, numbers side by side. Each message has its own Idempotency-Key (see
     * `idempotencyKey`), reused on its every retry: a 429's Retry-After is waited out, 5xx and
     * network errors are retried with back-off, and nothing is sent twice. Resolves with every
     * message's outcome, in list order, once all are settled; `onProgress` reports each as it
     * settles. A 429 without Retry-After (the monthly quota) stops the batch; so does `signal`.
     */
    sendPaced: (
      messages: readonly SendMessageInputV2[],
      options: PacedSendOptions<SendMessageInputV2> = {},
    ): Promise<PacedResult> =>
      sendPaced(
        messages,
        (message, idempotencyKey, signal) =>
          this.http.POST("/messages", {
            params: { header: { "idempotency-key": idempotencyKey } },
            body: message,
            signal,
          }),
        this.retry,
        options,
      ),
    get: (id: string, options?: CallOptions): Promise<MessageV2> =>
      this.calls.read((signal) => this.http.GET("/messages/{id}", { params: { path: { id } }, signal }), options),
    /**
     * Marks a user's (inbound) message read at the operator: the user sees it, and every earlier message of
     * the conversation, read; `typing: true` also shows the typing indicator until your reply or for about
     * 25 seconds. Idempotent: a message already marked answers its first mark without calling the operator
     * again, so it is retried like a read, except an operator's refusal that says it will not change
     * (`retriable: false`). An outbound message's id throws `ApiError` 400 (`details[].rule: "inbound_only"`),
     * an unknown id 404, and the operator's refusal 502 with its `code`, `retriable` and `upstreamCode`.
     */
    markRead: (id: string, options: MarkReadOptions = {}): Promise<ReadMark> =>
      this.calls.read(
        (signal) =>
          this.http.POST("/messages/{id}/read", {
            params: { path: { id } },
            body: options.typing === undefined ? {} : { typing: options.typing },
            signal,
          }),
        options,
      ),
    /** Messages, newest first, over every page (a short page never ends it); `type: "template"` filters. */
    list: (params: MessageListParamsV2 = {}, options?: CallOptions): Paginated<MessageV2> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/messages", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
  };

  readonly messageArchives = {
    /** Days older than the plan's history window, archived, newest first. */
    list: (params: ArchiveListParamsV2 = {}, options?: CallOptions): Paginated<MessageArchiveV2> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/message-archives", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /**
     * The messages of one archived day (`YYYY-MM-DD`, UTC) as v2 reads them (a rich message's type
     * and fields, `delivered` and `read` as statuses, an inbound message's answer and read mark),
     * oldest first, parsed line by line as the download streams in; as `client.messageArchives.download`
     * otherwise (nothing requested until iteration starts; retried like other reads; a `signal` bounds it).
     */
    download: (day: string, options?: CallOptions): AsyncIterable<MessageV2> => ({
      [Symbol.asyncIterator]: () =>
        this.calls.lines<MessageV2>(
          (request) =>
            this.http.GET("/message-archives/{day}", { params: { path: { day } }, parseAs: "stream", signal: request }),
          options?.signal,
        ),
    }),
  };

  readonly media = {
    /**
     * Uploads a file to the workspace's media store, kept 30 days (`expiresAt`); send it by its `id` as a
     * media kind's `mediaId`. `file` is a `Blob` (a `File`, or Node's `await fs.openAsBlob(path)`, read
     * from disk as it goes) or bytes, sent as the request's body as it is (never JSON). Its type is
     * `contentType`, else the Blob's `type`; its name `filename`, else a `File`'s `name`. Type and size are
     * checked against the operator's limits before anything is stored (`ApiError` 400 naming the rule).
     * Sent once, never retried: a retry after a lost answer would store a second copy.
     */
    upload: (file: Blob | ArrayBuffer | Uint8Array, options: MediaUploadOptions = {}): Promise<Media> => {
      const contentType = options.contentType ?? (file instanceof Blob ? file.type : "");
      if (!contentType)
        return Promise.reject(
          new TypeError("media.upload needs the file's type: a Blob with a type, or options.contentType"),
        );
      const filename =
        options.filename ?? (typeof File !== "undefined" && file instanceof File ? file.name : undefined);
      const size = file instanceof Blob ? file.size : file.byteLength;
      return once(
        (signal) =>
          this.http.POST("/media", {
            params: {
              header: { "content-type": contentType, "content-length": String(size) },
              query: filename === undefined ? {} : { filename },
            },
            // The file itself is the body, as it is: fetch sends its bytes with their length.
            body: "",
            bodySerializer: () => file,
            signal,
          }),
        options.signal,
      );
    },
    /** A file by id (an unknown, deleted or expired one throws `ApiError` 404). */
    get: (id: string, options?: CallOptions): Promise<Media> =>
      this.calls.read((signal) => this.http.GET("/media/{id}", { params: { path: { id } }, signal }), options),
    /** The workspace's files not expired, oldest first, over every page. */
    list: (params: MediaListParams = {}, options?: CallOptions): Paginated<Media> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/media", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /**
     * Deletes a file: its id answers 404 from then on (a message that names it and has not left yet
     * fails with `media_unavailable`). Sent once, never retried.
     */
    delete: async (id: string, options?: CallOptions): Promise<void> => {
      await once((signal) => this.http.DELETE("/media/{id}", { params: { path: { id } }, signal }), options?.signal);
    },
  };

  readonly templates = {
    /** The templates your numbers can send, by name and language, over every page. */
    list: (params: TemplateListParams = {}, options?: CallOptions): Paginated<Template> =>
      this.calls.paged(
        params,
        (cursor, signal) => this.http.GET("/templates", { params: { query: { ...params, cursor } }, signal }),
        options,
      ),
    /** A template by name, each of its languages (an unknown name throws `ApiError` 404). */
    get: (name: string, params: TemplateGetParams = {}, options?: CallOptions): Promise<TemplateDetail> =>
      this.calls.read(
        (signal) => this.http.GET("/templates/{name}", { params: { path: { name }, query: params }, signal }),
        options,
      ),
  };
}
