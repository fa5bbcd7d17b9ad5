import { Hono } from "hono";
import type { Child } from "hono/jsx";
import type { InboundMessage, Message, OutboundMessage } from "../../messages/message";
import { timelineOf, type CommittedChange } from "../../messages/timeline";
import { messageDeliveries, readMessageAs } from "../../engine/messages";
import { messageMedia } from "../../engine/media-downloads";
import type { DashboardEnv } from "../context";
import { Time } from "../components";
import { DeliveryLog } from "../delivery-log";
import { counterpartOf, NumberLink, numberLabels, shownMessage, StatusLine, type NumberLabels } from "../message-parts";
import { InboundKind, OutboundKind } from "../message-kinds";
import type { MessageV2 } from "../../messages/message-v2";
import { notFoundPage, rateLimitedPage } from "./errors";
import { mediaResponse } from "../../routes/message-media";

/** One row of the record: a label and its value ("—" when the value is absent). */
function Fact({ label, children }: { label: string; children: Child }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children ?? "—"}</dd>
    </>
  );
}

const Code = ({ value }: { value: string | null }) => (value === null ? <span>—</span> : <code>{value}</code>);

/** How a fact's value is shown: as code, as text, as an id that may be absent, or as a time. */
type FactKind = "code" | "text" | "id" | "time";
/** One row of the record: its label, how it is shown, and where its value is. */
type FactField<M> = readonly [label: string, kind: FactKind, value: (m: M) => string | null];

const OUTBOUND_FACTS: readonly FactField<OutboundMessage & { shownType: string }>[] = [
  ["To", "id", (m) => m.to],
  ["To user id", "id", (m) => m.toUserId],
  ["Type", "text", (m) => m.shownType],
  ["Upstream message id", "id", (m) => m.upstreamMessageId],
  ["Created (accepted)", "time", (m) => m.createdAt],
  ["Processing", "time", (m) => m.processingAt],
  ["Outcome unknown since", "time", (m) => m.outcomeUnknownSince],
  ["Sent", "time", (m) => m.sentAt],
  ["Delivered", "time", (m) => m.deliveredAt],
  ["Read", "time", (m) => m.readAt],
  ["Failed", "time", (m) => m.failedAt],
  ["Updated", "time", (m) => m.updatedAt],
];

const INBOUND_FACTS: readonly FactField<InboundMessage>[] = [
  ["From", "id", (m) => m.from],
  ["From user id", "id", (m) => m.fromUserId],
  ["Profile name", "text", (m) => m.profileName],
  ["Username", "text", (m) => m.username],
  ["Type", "text", (m) => m.type],
  ["Replies to", "id", (m) => (m.replyTo ? (m.replyTo.messageId ?? m.replyTo.upstreamMessageId) : null)],
  ["Upstream message id", "id", (m) => m.upstreamMessageId],
  ["Received (operator's time)", "time", (m) => m.receivedAt],
  ["Recorded", "time", (m) => m.createdAt],
];

function FactValue({ kind, value }: { kind: FactKind; value: string | null }) {
  if (kind === "code") return <code>{value}</code>;
  if (kind === "id") return <Code value={value} />;
  if (kind === "time") return <Time iso={value} seconds />;
  return <>{value ?? "—"}</>;
}

function Facts<M>({ m, fields }: { m: M; fields: readonly FactField<M>[] }) {
  return (
    <>
      {fields.map(([label, kind, value]) => (
        <Fact label={label}>
          <FactValue kind={kind} value={value(m)} />
        </Fact>
      ))}
    </>
  );
}

function Content({ m, v2 }: { m: Message; v2: MessageV2 }) {
  if (v2.direction === "outbound" && v2.type !== "text" && v2.type !== "template") {
    return (
      <>
        <p>
          Type <strong>{v2.type}</strong>; what was sent:
        </p>
        <OutboundKind m={v2} />
        <p class="hint">
          Its summary where only text is shown (API v1, events, archives): <q>{v2.text.body}</q>
        </p>
      </>
    );
  }
  if (m.text !== null) return <pre class="message-body">{m.text.body}</pre>;
  if (m.direction === "inbound" && m.content !== null) {
    return (
      <>
        {m.media ? <Media m={m} media={m.media} /> : null}
        <InboundKind m={m} />
        <p>
          Type <strong>{m.type}</strong>; the operator's payload, unchanged:
        </p>
        <pre class="message-body">
          <code>{JSON.stringify(m.content, null, 2)}</code>
        </pre>
      </>
    );
  }
  return (
    <p>
      Type <strong>{m.type}</strong>, without content.
    </p>
  );
}

/** Raster types a browser shows in an <img> (what the operator sends as images and stickers). */
const INLINE_IMAGES = new Set(["image/jpeg", "image/png", "image/webp", "image/gif"]);

const NOT_KEPT: Record<string, string> = {
  over_cap: "Not kept: it was larger than the plan allows (per item or per day).",
  failed: "Not kept: the copy from the operator failed.",
};

/** The file of an inbound message: an image shown inline, anything else offered as a download (both through the member's session). */
function Media({ m, media }: { m: InboundMessage; media: NonNullable<InboundMessage["media"]> }) {
  const href = `/dashboard/messages/${m.id}/media`;
  const notKept = NOT_KEPT[media.status];
  if (notKept) return <p class="problem">{notKept}</p>;
  const mime = (media.mimeType ?? "").split(";")[0]!.trim().toLowerCase();
  const name = media.filename ?? m.type;
  const about = `${media.mimeType ?? "unknown type"}${media.size === null ? "" : `, ${formatBytes(media.size)}`}`;
  const inline = (m.type === "image" || m.type === "sticker") && INLINE_IMAGES.has(mime);
  return (
    <section class="media" aria-label="Media">
      {inline ? (
        <figure>
          <img src={href} alt={media.caption ?? `${m.type === "sticker" ? "Sticker" : "Image"} from ${m.from}`} />
          {media.caption ? <figcaption>{media.caption}</figcaption> : null}
        </figure>
      ) : media.caption ? (
        <p>{media.caption}</p>
      ) : null}
      <p>
        <a href={href} download={name}>
          Download {name}
        </a>{" "}
        <span class="small-inline">({about})</span>
      </p>
      {media.status === "pending" ? (
        <p class="small-inline">Being copied: until it is, it comes straight from the operator (for 7 days).</p>
      ) : null}
    </section>
  );
}

const formatBytes = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;

function OperatorError({ m }: { m: OutboundMessage }) {
  if (!m.error) return null;
  return (
    <section class="card" aria-labelledby="error-heading">
      <h2 id="error-heading">Upstream error</h2>
      <dl class="facts">
        <Fact label="Code">
          <code>{m.error.code}</code>
        </Fact>
        <Fact label="Message">{m.error.message || "—"}</Fact>
        <Fact label="Retriable">
          {m.error.retriable ? "yes: sending the same content again later may succeed" : "no"}
        </Fact>
        <Fact label="Operator code">
          <Code value={m.error.upstreamCode} />
        </Fact>
      </dl>
    </section>
  );
}

function Timeline({ m, changes }: { m: Message; changes: readonly CommittedChange[] }) {
  return (
    <ol class="timeline">
      {timelineOf(m, changes).map((e) => (
        <li>
          <strong class={e.status === "failed" ? "bad" : e.status === "outcome_unknown" ? "warn" : undefined}>
            {e.status.replace("_", " ")}
          </strong>{" "}
          <Time iso={e.at} seconds />
          {e.error ? (
            <>
              {" "}
              <code>{e.error.code}</code>
            </>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

function Record({ m, type, labels }: { m: Message; type: string; labels: NumberLabels }) {
  return (
    <dl class="facts">
      <Fact label="Id">
        <code>{m.id}</code>
      </Fact>
      <Fact label="Direction">{m.direction}</Fact>
      <Fact label="Status">
        <StatusLine m={m} />
      </Fact>
      <Fact label="Number">
        <NumberLink id={m.channelNumberId} labels={labels} /> <code class="small-inline">{m.channelNumberId}</code>
      </Fact>
      {m.direction === "outbound" ? (
        // v1's view reads a rich kind as text: the type shown is v2's.
        <Facts m={{ ...m, shownType: type }} fields={OUTBOUND_FACTS} />
      ) : (
        <Facts m={m} fields={INBOUND_FACTS} />
      )}
    </dl>
  );
}

export const messagePage = new Hono<DashboardEnv>()
  // The same read as GET /api/v1/messages/{id}/media, with the member's session: always an attachment
  // (an <img> shows it all the same; opened on its own, it downloads instead of rendering here).
  .get("/messages/:id/media", async (c) => {
    const { workspace_id: workspaceId } = c.get("session");
    const media = (await messageMedia(c.env, workspaceId, c.req.param("id")))?.media ?? null;
    if (media?.kind === "limited") return rateLimitedPage(c, media.refusal, `/dashboard/messages/${c.req.param("id")}`);
    if (!media || media.kind !== "bytes") return notFoundPage(c);
    return mediaResponse(c, media, "attachment");
  })
  .get("/messages/:id", async (c) => {
    const { workspace_id: workspaceId } = c.get("session");
    const id = c.req.param("id");
    // The workspace's own object answers: another workspace's id is as unknown as a made-up one.
    const read = await readMessageAs(c.env, workspaceId, id, shownMessage);
    if (!read) return notFoundPage(c);
    const { m, v2 } = read.message;
    const [attempts, labels] = await Promise.all([
      messageDeliveries(c.env, workspaceId, m.id),
      numberLabels(c.env.DB, workspaceId, [], [m.channelNumberId]),
    ]);
    // Newest first, like the webhook's delivery log.
    const deliveries = attempts.reverse();
    const title = `Message ${m.direction === "outbound" ? "to" : "from"} ${counterpartOf(m)}`;
    return c.render(
      <>
        <p class="crumbs">
          <a href="/dashboard/messages">Messages</a> /
        </p>
        <h1>{title}</h1>
        <section class="card" aria-labelledby="record-heading">
          <h2 id="record-heading">Record</h2>
          <Record m={m} type={v2.type} labels={labels} />
        </section>
        {m.direction === "outbound" && m.outcomeUnknownSince ? (
          <p class="problem">
            The operator's answer to our call was lost (a timeout or a dropped connection), so the message may or may
            not have reached it. It is never sent again; the operator's status report settles it.
          </p>
        ) : null}
        {m.direction === "outbound" ? <OperatorError m={m} /> : null}
        <section aria-labelledby="content-heading">
          <h2 id="content-heading">Content</h2>
          <Content m={m} v2={v2} />
        </section>
        <section aria-labelledby="timeline-heading">
          <h2 id="timeline-heading">Status timeline</h2>
          <Timeline m={m} changes={read.changes} />
        </section>
        <section aria-labelledby="deliveries-heading">
          <h2 id="deliveries-heading">Webhook deliveries</h2>
          {deliveries.length === 0 ? (
            <p>No delivery of an event about this message to a webhook (attempts are kept 3 days).</p>
          ) : (
            <DeliveryLog rows={deliveries} numberId={m.channelNumberId} canReplay={false} label="Webhook deliveries" />
          )}
          {labels.get(m.channelNumberId)?.connected ? (
            <p>
              <a href={`/dashboard/webhooks/${m.channelNumberId}`}>The number's webhook</a>: its full delivery log, and
              replays.
            </p>
          ) : null}
        </section>
      </>,
      { title },
    );
  });
