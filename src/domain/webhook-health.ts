/**
 * A webhook whose failures have lasted longer than this is disabled: the delivery consumer
 * disables it, and the Webhooks page tells the customer when it will be.
 */
export const DISABLE_AFTER_MS = 72 * 60 * 60 * 1000;
