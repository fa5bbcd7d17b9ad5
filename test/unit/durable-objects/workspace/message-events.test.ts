import { describe, expect, it } from "vitest";
import { eventIdOf } from "../../../../src/messages/events";
import { newUuidV7 } from "../../../../src/lib/job-id";
import { changesOf, eventOf, newChanges } from "../../../../src/durable-objects/workspace/message-events";
import type { MessageRow } from "../../../../src/messages/record";

const T = Date.UTC(2031, 2, 3, 4, 5, 6);
const iso = (ms: number) => new Date(ms).toISOString();
const W = "9d1c0b7e-0000-4000-8000-000000000001";
const N = "5e2f1a3b-0000-4000-8000-000000000002";

/** An outbound record as a day table holds it, accepted at T; `over` sets what happened to it. */
function outbound(over: Partial<MessageRow> = {}): MessageRow {
  return {
    id: newUuidV7(T),
    direction: "outbound",
    channel_number_id: N,
    recipient: "5511999998888",
    type: "text",
    body: "Your order shipped",
    content: null,
    details: null,
    status: "queued",
    idem_key: "k",
    fingerprint: "f",
    pending: 1,
    attempts: 0,
    answered: 0,
    next_attempt_at: null,
    version: null,
    upstream_message_id: null,
    error_code: null,
    error_message: null,
    error_retriable: null,
    upstream_error_code: null,
    created_at: T,
    updated_at: T,
    processing_at: null,
    sent_at: null,
    failed_at: null,
    delivered_at: null,
    read_at: null,
    outcome_unknown_since: null,
    received_at: null,
    changes: null,
    ...over,
  };
}

const sentAndRead = outbound({
  status: "sent",
  upstream_message_id: "wamid.S1",
  processing_at: T + 10,
  sent_at: T + 20,
  delivered_at: T + 2_000,
  read_at: T + 5_000,
  updated_at: T + 5_000,
});

const failure = {
  error_code: "recipient_unreachable",
  error_message: "The recipient cannot receive messages.",
  error_retriable: 0,
  upstream_error_code: "131026",
};

const eventsOf = (row: MessageRow) => changesOf(row).map((c) => eventOf(W, row, c));

describe("changesOf", () => {
  it("lists a record's changes in causal order: processing, sent, delivered, read", () => {
    expect(changesOf(sentAndRead)).toEqual([
      { kind: "processing", at: T + 10 },
      { kind: "sent", at: T + 20 },
      { kind: "delivered", at: T + 2_000 },
      { kind: "read", at: T + 5_000 },
    ]);
    expect(changesOf(outbound())).toEqual([]);
  });

  it("orders changes of the same instant by the lifecycle", () => {
    const row = outbound({ status: "sent", processing_at: T, sent_at: T, delivered_at: T, read_at: T });
    expect(changesOf(row).map((c) => c.kind)).toEqual(["processing", "sent", "delivered", "read"]);
  });

  it("orders by time first: a read reported before the delivery comes before it", () => {
    const row = outbound({ status: "sent", processing_at: T, sent_at: T + 1, delivered_at: T + 9, read_at: T + 5 });
    expect(changesOf(row).map((c) => c.kind)).toEqual(["processing", "sent", "read", "delivered"]);
  });

  it("a failure after sent comes last; an inbound record has one change, received", () => {
    const row = outbound({ ...failure, status: "failed", processing_at: T, sent_at: T + 1, failed_at: T + 60_000 });
    expect(changesOf(row).map((c) => c.kind)).toEqual(["processing", "sent", "failed"]);
    const inbound = outbound({ direction: "inbound", status: "received", recipient: "5511977776666", created_at: T });
    expect(changesOf(inbound)).toEqual([{ kind: "received", at: T }]);
  });
});

describe("changesOf: the order the changes were committed in (`changes`), never their times", () => {
  it("a failure the operator dated in the second before our sent comes after it, previousStatus sent, updatedAt not before sent's", () => {
    // Sent at .600 on our clock; the operator's failure report says the whole second (.000).
    const row = outbound({
      ...failure,
      status: "failed",
      upstream_message_id: "wamid.S1",
      processing_at: T + 550,
      sent_at: T + 600,
      failed_at: T,
      changes: "psf",
    });
    expect(changesOf(row)).toEqual([
      { kind: "processing", at: T + 550 },
      { kind: "sent", at: T + 600 },
      { kind: "failed", at: T + 600 },
    ]);
    const [, sent, failed] = eventsOf(row);
    expect(failed!.data).toMatchObject({ status: "failed", previousStatus: "sent", updatedAt: iso(T + 600) });
    expect(failed!.createdAt >= sent!.createdAt).toBe(true);
  });

  it("a delivery reported before the read comes first whatever the operator's times; each keeps the operator's own time", () => {
    const row = outbound({
      status: "sent",
      processing_at: T,
      sent_at: T + 10,
      delivered_at: T + 9_000,
      read_at: T + 5_000,
      changes: "psdr",
    });
    expect(changesOf(row).map((c) => c.kind)).toEqual(["processing", "sent", "delivered", "read"]);
    const [, , delivered, read] = eventsOf(row);
    expect(delivered!.data).toMatchObject({ deliveredAt: iso(T + 9_000), updatedAt: iso(T + 9_000) });
    // Read after the delivery: its own time stays the operator's, its updatedAt never goes back.
    expect(read!.data).toMatchObject({ readAt: iso(T + 5_000), updatedAt: iso(T + 9_000), previousStatus: "sent" });
  });

  it("a delivery after a failure has previousStatus failed from the sequence alone", () => {
    const row = outbound({
      ...failure,
      status: "failed",
      processing_at: T,
      sent_at: T + 1,
      failed_at: T + 5,
      delivered_at: T + 2,
      changes: "psfd",
    });
    const [, , failed, delivered] = eventsOf(row);
    expect(failed!.data).toMatchObject({ previousStatus: "sent", deliveredAt: null });
    expect(delivered!.data).toMatchObject({ status: "failed", previousStatus: "failed", updatedAt: iso(T + 5) });
  });
});

describe("newChanges", () => {
  it("is what an update added, in causal order (nothing when it added nothing)", () => {
    const processing = outbound({ status: "processing", processing_at: T + 10 });
    const sent = { ...processing, status: "sent", sent_at: T + 20, upstream_message_id: "wamid.S1" } as MessageRow;
    expect(newChanges(null, sent).map((c) => c.kind)).toEqual(["processing", "sent"]);
    expect(newChanges(processing, sent).map((c) => c.kind)).toEqual(["sent"]);
    expect(newChanges(sent, sent)).toEqual([]);
  });
});

describe("eventOf: each event as of its change", () => {
  it("the processing event of a message since sent, delivered and read says none of that", () => {
    const [processing] = eventsOf(sentAndRead);
    expect(processing).toEqual({
      id: eventIdOf(sentAndRead.id, "processing"),
      type: "message.status",
      workspaceId: W,
      channelNumberId: N,
      createdAt: iso(T + 10),
      data: {
        messageId: sentAndRead.id,
        channelNumberId: N,
        to: "5511999998888",
        toUserId: null,
        status: "processing",
        previousStatus: "queued",
        upstreamMessageId: null,
        error: null,
        deliveredAt: null,
        readAt: null,
        updatedAt: iso(T + 10),
      },
    });
  });

  it("sent has the operator's id; delivered its time but not the later read; read both", () => {
    const [, sent, delivered, read] = eventsOf(sentAndRead);
    expect(sent!.data).toMatchObject({
      status: "sent",
      previousStatus: "processing",
      upstreamMessageId: "wamid.S1",
      deliveredAt: null,
      readAt: null,
      updatedAt: iso(T + 20),
    });
    expect(delivered!.data).toMatchObject({
      status: "sent",
      previousStatus: "sent",
      deliveredAt: iso(T + 2_000),
      readAt: null,
      updatedAt: iso(T + 2_000),
    });
    expect(read!.data).toMatchObject({
      status: "sent",
      previousStatus: "sent",
      deliveredAt: iso(T + 2_000),
      readAt: iso(T + 5_000),
    });
    expect([sent, delivered, read].map((e) => e!.id)).toEqual(
      (["sent", "delivered", "read"] as const).map((k) => eventIdOf(sentAndRead.id, k)),
    );
  });

  it("read without a delivery report: the read event has no delivery time", () => {
    const row = outbound({ status: "sent", processing_at: T, sent_at: T + 1, read_at: T + 9 });
    const read = eventsOf(row).at(-1)!;
    expect(read.id).toBe(eventIdOf(row.id, "read"));
    expect(read.data).toMatchObject({ status: "sent", deliveredAt: null, readAt: iso(T + 9) });
  });

  it("failed after sent has previousStatus sent and the error; the earlier events of the record have none", () => {
    const row = outbound({
      ...failure,
      status: "failed",
      upstream_message_id: "wamid.S1",
      processing_at: T,
      sent_at: T + 1,
      failed_at: T + 60_000,
    });
    const [processing, sent, failed] = eventsOf(row);
    expect(failed!.data).toMatchObject({
      status: "failed",
      previousStatus: "sent",
      upstreamMessageId: "wamid.S1",
      error: {
        code: "recipient_unreachable",
        message: "The recipient cannot receive messages.",
        retriable: false,
        upstreamCode: "131026",
      },
      updatedAt: iso(T + 60_000),
    });
    expect(processing!.data).toMatchObject({ status: "processing", error: null });
    expect(sent!.data).toMatchObject({ status: "sent", error: null });
  });

  it("a delivery or read reported after the failure (another device) comes after it, status still failed, with the error", () => {
    // The operator's time for the delivery may even be earlier than the failure's: it was reported after it.
    const row = outbound({
      ...failure,
      status: "failed",
      upstream_message_id: "wamid.S1",
      processing_at: T,
      sent_at: T + 1,
      failed_at: T + 60_000,
      delivered_at: T + 30_000,
      read_at: T + 90_000,
    });
    expect(changesOf(row).map((c) => c.kind)).toEqual(["processing", "sent", "failed", "delivered", "read"]);
    const [, , failed, delivered, read] = eventsOf(row);
    expect(failed!.data).toMatchObject({ status: "failed", previousStatus: "sent", deliveredAt: null });
    expect(delivered!.data).toMatchObject({
      status: "failed",
      previousStatus: "failed",
      deliveredAt: iso(T + 30_000),
      readAt: null,
      error: { code: "recipient_unreachable" },
    });
    expect(read!.data).toMatchObject({ status: "failed", previousStatus: "failed", readAt: iso(T + 90_000) });
  });

  it("failed during the call has previousStatus processing; given up before any call, queued", () => {
    const duringCall = outbound({ ...failure, status: "failed", processing_at: T, failed_at: T + 5 });
    expect(eventsOf(duringCall).map((e) => e.data)).toMatchObject([
      { status: "processing", previousStatus: "queued" },
      { status: "failed", previousStatus: "processing" },
    ]);
    const neverCalled = outbound({ ...failure, status: "failed", failed_at: T + 5 });
    expect(eventsOf(neverCalled).map((e) => e.data)).toMatchObject([{ status: "failed", previousStatus: "queued" }]);
  });

  it("is the same event every time it is rebuilt, whatever happened to the record since", () => {
    const early = outbound({ status: "sent", processing_at: T + 10, sent_at: T + 20, upstream_message_id: "wamid.S1" });
    const later = { ...sentAndRead, id: early.id };
    expect(eventsOf(later).slice(0, 2)).toEqual(eventsOf(early));
  });

  it("an inbound record's received event carries the sender, the text and the operator's id", () => {
    const row = outbound({
      direction: "inbound",
      status: "received",
      recipient: "5511977776666",
      body: "Thanks!",
      upstream_message_id: "wamid.IN1",
      received_at: T - 1_000,
      created_at: T,
    });
    expect(eventsOf(row)).toEqual([
      {
        id: eventIdOf(row.id, "received"),
        type: "message.received",
        workspaceId: W,
        channelNumberId: N,
        createdAt: iso(T),
        data: {
          messageId: row.id,
          channelNumberId: N,
          from: "5511977776666",
          fromUserId: null,
          profileName: null,
          username: null,
          replyTo: null,
          forwarded: null,
          reaction: null,
          referral: null,
          system: null,
          type: "text",
          text: { body: "Thanks!" },
          content: null,
          upstreamMessageId: "wamid.IN1",
          receivedAt: iso(T - 1_000),
          media: null,
        },
      },
    ]);
  });
});

describe("eventOf: what a delivery's and a read's events say in API v2", () => {
  const v2Of = (row: MessageRow) => eventsOf(row).map((e) => (e.type === "message.status" ? (e.v2 ?? null) : null));

  it("delivered and read are statuses: each event names its status and its predecessor; the others carry nothing more", () => {
    expect(v2Of(sentAndRead)).toEqual([
      null,
      null,
      { status: "delivered", previousStatus: "sent", deliveredAt: iso(T + 2_000), readAt: null },
      { status: "read", previousStatus: "delivered", deliveredAt: iso(T + 2_000), readAt: iso(T + 5_000) },
    ]);
  });

  it("a read before the delivery: sent → read with the read's time as the delivery's; the late delivery stays read", () => {
    const row = outbound({
      status: "sent",
      processing_at: T,
      sent_at: T + 10,
      read_at: T + 5_000,
      delivered_at: T + 3_000,
      changes: "psrd",
    });
    expect(v2Of(row).slice(2)).toEqual([
      { status: "read", previousStatus: "sent", deliveredAt: iso(T + 5_000), readAt: iso(T + 5_000) },
      { status: "read", previousStatus: "read", deliveredAt: iso(T + 3_000), readAt: iso(T + 5_000) },
    ]);
  });

  it("a delivery and a read after a failure leave it failed, as in v1", () => {
    const row = outbound({
      ...failure,
      status: "failed",
      processing_at: T,
      sent_at: T + 1,
      failed_at: T + 5,
      delivered_at: T + 6,
      read_at: T + 7,
      changes: "psfdr",
    });
    expect(v2Of(row).slice(3)).toEqual([
      { status: "failed", previousStatus: "failed", deliveredAt: iso(T + 6), readAt: null },
      { status: "failed", previousStatus: "failed", deliveredAt: iso(T + 6), readAt: iso(T + 7) },
    ]);
  });
});
