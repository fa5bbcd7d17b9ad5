export {
  MessagingClient,
  type CallOptions,
  type ChannelNumber,
  type ChannelNumberDetail,
  type ConnectChannelNumberInput,
  type ClientOptions,
  type ContactWindow,
  type ListParams,
  type InboundMedia,
  type InboundMessage,
  type Me,
  type Message,
  type MessageArchive,
  type MessageEvents,
  type MessageListParams,
  type MessageMedia,
  type MessageTimelineEntry,
  type OutboundMessage,
  type SendMessageInput,
  type SendResult,
  type Usage,
  type Webhook,
  type WebhookDelivery,
  type WebhookWithSecret,
} from "./client.js";
export {
  apiV2Root,
  MessagingClientV2,
  type MessageListParamsV2,
  type MessageV2,
  type SendMessageInputV2,
  type SendResultV2,
  type Template,
  type TemplateContent,
  type TemplateDetail,
  type TemplateGetParams,
  type TemplateListParams,
} from "./v2.js";
export { ApiError, ConnectionError, MessagingError, type ErrorCode, type ErrorDetail } from "./errors.js";
export { Paginated, type Page } from "./paginate.js";
export { DEFAULT_RETRY, type RetryOptions } from "./retry.js";
export {
  SEND_LIMITS,
  type PaceLimit,
  type PacedOutcome,
  type PacedProgress,
  type PacedResult,
  type PacedSendOptions,
} from "./paced.js";
export {
  verifyWebhook,
  verifyWebhookV2,
  WebhookVerificationError,
  type WebhookEvent,
  type WebhookEventV2,
  type WebhookEventType,
  type WebhookHeaders,
} from "./webhooks.js";
export type { components, operations, paths, webhooks } from "./generated/openapi.js";
