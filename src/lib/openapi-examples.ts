// Values shared by the examples of the OpenAPI document, so that the examples of
// one flow (send, read, webhook) refer to the same number, message and webhook.
export const EXAMPLE = {
  workspaceId: "3b1f0c2e-7d4a-4c8e-9f21-6a5d4e3c2b1a",
  apiKeyId: "9c2e4f60-1b3d-4a5e-8f70-2d4c6e8a0b1c",
  channelNumberId: "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33",
  jobId: "42ab2093-bbe3-8710-9a4a-492ccdac721d",
  idempotencyKey: "6f1c2a7e-3b0d-4e59-9d7b-2f3c1a9e8b10",
  webhookId: "0d8f6a61-3c1b-4f39-a6b4-6e1f1c9b2a70",
  deliveryId: "ddb43603-bd44-4e4f-92d6-be0520b26abd",
  eventId: "evt_87d9d4ca8d6e49ceb261a24e33b105cf",
  inboundMessageId: "c7d51b0e-0f4e-4a4b-9b77-3a1b0f3f6d25",
  to: "5511999998888",
  contact: "5511977776666",
  createdAt: "2026-11-22T18:35:47.287Z",
  updatedAt: "2026-11-22T18:35:48.012Z",
  cursor: "WyIyMDI2LTExLTIyVDE4OjM1OjQ3LjI4N1oiLCI2ZjFjMmM0ZS04YTU3LTRiNWUtOWQwZS0yZjhjOWExYjdkMzMiXQ",
} as const;
