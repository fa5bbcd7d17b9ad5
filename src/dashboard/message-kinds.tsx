import { z } from "@hono/zod-openapi";
import type { InboundMessage } from "../messages/message";
import type { MessageV2, OutboundMessageV2 } from "../messages/message-v2";
import type { InteractiveContent } from "../messages/kinds/interactive";
import type { LocationContent } from "../messages/kinds/location";
import type { ContactsContent } from "../messages/kinds/contacts";
import { storedFileHref } from "../features/media/pages";

// How the dashboard shows each kind of message beyond text: what a rich send carried (the v2
// view's object under its type's name) and what an inbound answer says. Every value is a
// customer's or a user's words: rendered as JSX text (escaped), never as markup. A link given to
// the operator is shown as a link for a person to follow, never loaded by the page (no <img> or
// <video> of it: the page's policy allows images from our origin only).

/**
 * A link a member may follow: http(s) only, opened without our origin as referrer or opener.
 * Anything else (never accepted by a send's validation) is shown as text.
 */
export function SafeLink({ href }: { href: string }) {
  let safe: boolean;
  try {
    const url = new URL(href);
    safe = url.protocol === "https:" || url.protocol === "http:";
  } catch {
    safe = false;
  }
  if (!safe) return <code>{href}</code>;
  return (
    <a href={href} rel="noopener noreferrer nofollow" referrerpolicy="no-referrer" target="_blank">
      {href}
    </a>
  );
}

/** One fact of a kind: a label and its value. */
function Row({ label, children }: { label: string; children: unknown }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

type MediaFields = {
  link?: string | undefined;
  mediaId?: string | undefined;
  caption?: string | undefined;
  filename?: string | undefined;
};

function MediaFacts({ type, media }: { type: string; media: MediaFields }) {
  return (
    <dl class="facts kind-facts" aria-label={`The ${type} sent`}>
      <Row label="Media">{type}</Row>
      {media.link !== undefined ? (
        <Row label="Link">
          <SafeLink href={media.link} />{" "}
          <span class="hint">(fetched by the operator when it sends; this page never loads it)</span>
        </Row>
      ) : null}
      {media.mediaId !== undefined ? (
        <Row label="Stored file">
          <code>{media.mediaId}</code>{" "}
          <span class="hint">(from the media store, uploaded to the operator when it sends)</span>{" "}
          <a href={storedFileHref(media.mediaId)} download>
            Download
          </a>
        </Row>
      ) : null}
      {media.mediaId !== undefined && (type === "image" || type === "sticker") ? (
        <Row label="Preview">
          {/* Our own origin's copy, served as an attachment with the inbound media's headers. */}
          <img class="stored-preview" src={storedFileHref(media.mediaId)} alt={media.caption ?? `The ${type} sent`} />
        </Row>
      ) : null}
      {media.filename !== undefined ? <Row label="File name">{media.filename}</Row> : null}
      {media.caption !== undefined ? <Row label="Caption">{media.caption}</Row> : null}
    </dl>
  );
}

type Header = NonNullable<Extract<InteractiveContent, { type: "button" }>["header"]>;

function HeaderFact({ header }: { header: Header | undefined }) {
  if (!header) return null;
  return (
    <Row label="Header">
      {header.type === "text" ? (
        header.text
      ) : (
        <>
          {header.type}: <SafeLink href={header.link} />
        </>
      )}
    </Row>
  );
}

function InteractiveFacts({ i }: { i: InteractiveContent }) {
  const kind = { button: "reply buttons", list: "list", cta_url: "call-to-action URL button" }[i.type];
  return (
    <dl class="facts kind-facts" aria-label="The interactive message sent">
      <Row label="Interactive">{kind}</Row>
      <HeaderFact header={i.header} />
      <Row label="Body">
        <span class="message-text">{i.body}</span>
      </Row>
      {i.footer !== undefined ? <Row label="Footer">{i.footer}</Row> : null}
      {i.type === "button" ? (
        <Row label="Buttons">
          <ol class="kind-list" aria-label="Buttons">
            {i.buttons.map((b) => (
              <li>
                <strong>{b.title}</strong> <span class="hint">id</span> <code>{b.id}</code>
              </li>
            ))}
          </ol>
        </Row>
      ) : null}
      {i.type === "list" ? (
        <>
          <Row label="List button">{i.button}</Row>
          <Row label="Sections">
            <ol class="kind-list" aria-label="Sections">
              {i.sections.map((s) => (
                <li>
                  {s.title !== undefined ? <strong>{s.title}</strong> : <span class="hint">(untitled)</span>}
                  <ul class="kind-list" aria-label={`Rows${s.title !== undefined ? ` of ${s.title}` : ""}`}>
                    {s.rows.map((r) => (
                      <li>
                        {r.title}
                        {r.description !== undefined ? <span class="hint"> · {r.description}</span> : null}{" "}
                        <span class="hint">id</span> <code>{r.id}</code>
                      </li>
                    ))}
                  </ul>
                </li>
              ))}
            </ol>
          </Row>
        </>
      ) : null}
      {i.type === "cta_url" ? (
        <Row label="Button">
          <strong>{i.button.text}</strong> → <SafeLink href={i.button.url} />
        </Row>
      ) : null}
    </dl>
  );
}

function LocationFacts({ l }: { l: Pick<LocationContent, "latitude" | "longitude" | "name" | "address"> }) {
  return (
    <dl class="facts kind-facts" aria-label="The location">
      {l.name !== undefined ? <Row label="Name">{l.name}</Row> : null}
      {l.address !== undefined ? <Row label="Address">{l.address}</Row> : null}
      <Row label="Coordinates">
        <code>
          {l.latitude}, {l.longitude}
        </code>
      </Row>
    </dl>
  );
}

/** A contact card as the dashboard lists it: a name and its phones. */
interface Card {
  name: string;
  phones: { phone: string; type?: string | undefined }[];
  emails: string[];
  company?: string | undefined;
}

function ContactCards({ cards }: { cards: Card[] }) {
  return (
    <ol class="kind-list" aria-label="Contact cards">
      {cards.map((c) => (
        <li>
          <strong>{c.name}</strong>
          {c.company !== undefined ? <span class="hint"> · {c.company}</span> : null}
          {c.phones.length > 0 ? (
            <ul class="kind-list" aria-label={`Phones of ${c.name}`}>
              {c.phones.map((p) => (
                <li>
                  <code>{p.phone}</code>
                  {p.type !== undefined ? <span class="hint"> ({p.type})</span> : null}
                </li>
              ))}
            </ul>
          ) : null}
          {c.emails.length > 0 ? <p class="hint">{c.emails.join(", ")}</p> : null}
        </li>
      ))}
    </ol>
  );
}

const sentCards = (cards: ContactsContent): Card[] =>
  cards.map((c) => ({
    name: c.name.formattedName,
    phones: (c.phones ?? []).map((p) => ({ phone: p.phone, type: p.type })),
    emails: (c.emails ?? []).map((e) => e.email),
    company: c.org?.company,
  }));

/** What an outbound message of a rich kind carried; null for text and templates (shown as text). */
export function OutboundKind({ m }: { m: OutboundMessageV2 }) {
  const media = m.image ?? m.video ?? m.audio ?? m.document ?? m.sticker;
  if (media) return <MediaFacts type={m.type} media={media} />;
  if (m.interactive) return <InteractiveFacts i={m.interactive} />;
  if (m.location) return <LocationFacts l={m.location} />;
  if (m.contacts)
    return (
      <section aria-label="The contacts sent">
        <ContactCards cards={sentCards(m.contacts)} />
      </section>
    );
  if (m.reaction)
    return (
      <dl class="facts kind-facts" aria-label="The reaction">
        <Row label="Reaction">
          {m.reaction.emoji === "" ? "removed (an empty emoji)" : <span class="emoji">{m.reaction.emoji}</span>}
        </Row>
        <Row label="Reacts to">
          <a href={`/dashboard/messages/${m.reaction.messageId}`}>
            <code>{m.reaction.messageId}</code>
          </a>
        </Row>
      </dl>
    );
  return null;
}

// What the operator sends for a user's answer or other content: read here for display only, each
// shape as its "Webhooks: messages" reference documents it; a payload of another shape shows as
// the raw JSON the page prints below anyway.
const Reply = z.object({ id: z.string(), title: z.string(), description: z.string().optional() });
const InboundInteractive = z.union([
  z.object({ type: z.literal("button_reply"), button_reply: Reply }),
  z.object({ type: z.literal("list_reply"), list_reply: Reply }),
  z.object({
    type: z.literal("nfm_reply"),
    nfm_reply: z.object({ name: z.string().optional(), body: z.string().optional() }),
  }),
]);
const InboundButton = z.object({ text: z.string(), payload: z.string().optional() });
const InboundLocation = z.object({
  latitude: z.number(),
  longitude: z.number(),
  name: z.string().optional(),
  address: z.string().optional(),
});
const InboundContacts = z.object({
  contacts: z.array(
    z.object({
      name: z.object({ formatted_name: z.string() }),
      phones: z.array(z.object({ phone: z.string(), type: z.string().optional() })).optional(),
      emails: z.array(z.object({ email: z.string() })).optional(),
      org: z.object({ company: z.string().optional() }).optional(),
    }),
  ),
});
const InboundReaction = z.object({ message_id: z.string(), emoji: z.string().optional() });

/** The answer an inbound interactive or quick-reply message carries, if it is one. */
function answerOf(m: InboundMessage): { kind: string; title: string; id: string | null; note?: string } | null {
  if (m.type === "interactive") {
    const i = InboundInteractive.safeParse(m.content);
    if (!i.success) return null;
    if (i.data.type === "button_reply")
      return { kind: "button reply", title: i.data.button_reply.title, id: i.data.button_reply.id };
    if (i.data.type === "list_reply")
      return {
        kind: "list reply",
        title: i.data.list_reply.title,
        id: i.data.list_reply.id,
        ...(i.data.list_reply.description !== undefined ? { note: i.data.list_reply.description } : {}),
      };
    return { kind: "flow reply", title: i.data.nfm_reply.body ?? i.data.nfm_reply.name ?? "flow", id: null };
  }
  if (m.type === "button") {
    const b = InboundButton.safeParse(m.content);
    return b.success ? { kind: "quick reply", title: b.data.text, id: b.data.payload ?? null } : null;
  }
  return null;
}

/** An inbound message's content made legible (an answer, a location, contacts, a reaction); null for others. */
export function InboundKind({ m }: { m: InboundMessage }) {
  const answer = answerOf(m);
  if (answer)
    return (
      <dl class="facts kind-facts" aria-label="The answer">
        <Row label="Answer">
          <strong>{answer.title}</strong> <span class="hint">({answer.kind})</span>
        </Row>
        {answer.id !== null ? (
          <Row label="Answer id">
            <code>{answer.id}</code>
          </Row>
        ) : null}
        {answer.note !== undefined ? <Row label="Description">{answer.note}</Row> : null}
      </dl>
    );
  if (m.type === "location") {
    const l = InboundLocation.safeParse(m.content);
    return l.success ? <LocationFacts l={l.data} /> : null;
  }
  if (m.type === "contacts") {
    const c = InboundContacts.safeParse(m.content);
    if (!c.success) return null;
    const cards = c.data.contacts.map((card) => ({
      name: card.name.formatted_name,
      phones: card.phones ?? [],
      emails: (card.emails ?? []).map((e) => e.email),
      company: card.org?.company,
    }));
    return (
      <section aria-label="The contacts received">
        <ContactCards cards={cards} />
      </section>
    );
  }
  if (m.type === "reaction") {
    const r = InboundReaction.safeParse(m.content);
    if (!r.success) return null;
    return (
      <dl class="facts kind-facts" aria-label="The reaction">
        <Row label="Reaction">
          {r.data.emoji ? <span class="emoji">{r.data.emoji}</span> : "removed (an empty emoji)"}
        </Row>
        <Row label="Reacts to (operator id)">
          <code>{r.data.message_id}</code>
        </Row>
      </dl>
    );
  }
  return null;
}

/**
 * A message's one-line text for the list: a text's body, or `[kind]` and what a message of
 * another kind says (a rich send's summary, an interactive message's buttons, a user's answer).
 */
export function previewText(m: MessageV2): string {
  if (m.direction === "outbound") {
    const i = m.interactive;
    if (!i) return m.text.body;
    const labels = i.type === "button" ? i.buttons.map((b) => b.title) : [i.type === "list" ? i.button : i.button.text];
    return `[interactive] ${i.body} ${labels.map((l) => `[${l}]`).join(" ")}`;
  }
  if (m.text !== null) return m.text.body;
  const answer = answerOf(m);
  if (answer) return `[${answer.kind}] ${answer.title}`;
  if (m.type === "location") {
    const l = InboundLocation.safeParse(m.content);
    if (l.success) return `[location] ${l.data.name ?? `${l.data.latitude}, ${l.data.longitude}`}`;
  }
  if (m.type === "reaction") {
    const r = InboundReaction.safeParse(m.content);
    if (r.success) return r.data.emoji ? `[reaction] ${r.data.emoji}` : "[reaction removed]";
  }
  if (m.media?.caption) return `[${m.type}] ${m.media.caption}`;
  return `[${m.type}]`;
}
