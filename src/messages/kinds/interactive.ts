import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";
import { boundedText, codePoints, publicHttpsLink, uniqueBy } from "./fields";

// Interactive messages: reply buttons, a list, a call-to-action URL button. The operator's shapes
// and limits, from the WhatsApp Cloud API's "Interactive reply buttons messages", "Interactive
// list messages" and "Interactive Call-to-Action URL Button Messages" pages:
// - reply buttons: 1 to 3, each an id (at most 256 characters) and a title (at most 20, unique
//   in the message); body at most 1,024; a text header at most 60, or an image, video or
//   document header; footer at most 60;
// - list: one button label (at most 20); 1 to 10 sections with 10 rows in all, a section's
//   title at most 24 (required once there are two sections), a row's id at most 200 (unique in
//   the message), title at most 24 and description at most 72; body at most 4,096; a text
//   header only, at most 60; footer at most 60;
// - cta_url: a button label (at most 20) and the URL it opens; body at most 1,024; header and
//   footer as reply buttons'.

export const INTERACTIVE_LIMITS = {
  headerText: 60,
  footer: 60,
  buttonBody: 1024,
  listBody: 4096,
  buttons: 3,
  buttonId: 256,
  buttonTitle: 20,
  listButton: 20,
  sections: 10,
  rows: 10,
  sectionTitle: 24,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  ctaText: 20,
  /** As a template's URL button (the operator documents none for cta_url's own). */
  ctaUrl: 2000,
} as const;

const L = INTERACTIVE_LIMITS;

const TextHeader = z.strictObject({
  type: z.literal("text"),
  text: boundedText("interactive.header.text", L.headerText, { example: "Your order" }),
});
const MediaHeader = (kind: "image" | "video" | "document") =>
  z.strictObject({ type: z.literal(kind), link: publicHttpsLink(`interactive.header.link`) });

const AnyHeader = z
  .discriminatedUnion("type", [TextHeader, MediaHeader("image"), MediaHeader("video"), MediaHeader("document")], {
    error: 'interactive.header must be {"type": "text", "text"} or {"type": "image" | "video" | "document", "link"}.',
  })
  .openapi({
    description: 'A text (at most 60 characters) or a media header: `{"type": "image", "link": "https://…"}`.',
  });

const body = (max: number) =>
  boundedText("interactive.body", max, { example: "Your table for 4 is booked for Friday at 8 pm." });
const footer = boundedText("interactive.footer", L.footer, { example: "Reply to change it." }).optional();

const ReplyButton = z.strictObject({
  id: boundedText("interactive.buttons[].id", L.buttonId, {
    description: "Comes back as the answer's id when the user taps it.",
    example: "confirm",
  }),
  title: boundedText("interactive.buttons[].title", L.buttonTitle, { example: "Confirm" }),
});

const Buttons = z.strictObject({
  type: z.literal("button"),
  header: AnyHeader.optional(),
  body: body(L.buttonBody),
  footer,
  buttons: z
    .array(ReplyButton)
    .min(1, { error: "interactive.buttons needs at least one button." })
    .max(L.buttons, { error: `interactive.buttons holds at most ${L.buttons} buttons (the operator's limit).` }),
});

const Row = z.strictObject({
  id: boundedText("interactive.sections[].rows[].id", L.rowId, { example: "express" }),
  title: boundedText("interactive.sections[].rows[].title", L.rowTitle, { example: "Express" }),
  description: boundedText("interactive.sections[].rows[].description", L.rowDescription, {
    example: "Next day",
  }).optional(),
});

const Section = z.strictObject({
  title: boundedText("interactive.sections[].title", L.sectionTitle, { example: "Delivery" }).optional(),
  rows: z
    .array(Row)
    .min(1, { error: "A section needs at least one row." })
    .max(L.rows, { error: `A list holds at most ${L.rows} rows in all.` }),
});

const List = z.strictObject({
  type: z.literal("list"),
  header: TextHeader.optional().openapi({ description: "A text header only, at most 60 characters." }),
  body: body(L.listBody),
  footer,
  button: boundedText("interactive.button", L.listButton, {
    description: "The label of the button that opens the list.",
    example: "Choose",
  }),
  sections: z
    .array(Section)
    .min(1, { error: "interactive.sections needs at least one section." })
    .max(L.sections, { error: `interactive.sections holds at most ${L.sections} sections.` }),
});

const CtaUrl = z.strictObject({
  type: z.literal("cta_url"),
  header: AnyHeader.optional(),
  body: body(L.buttonBody),
  footer,
  button: z.strictObject({
    text: boundedText("interactive.button.text", L.ctaText, { example: "Track parcel" }),
    url: z
      .string({ error: "interactive.button.url must be a string." })
      .refine((u) => codePoints(u) <= L.ctaUrl, {
        error: `interactive.button.url is longer than ${L.ctaUrl} characters.`,
        params: { rule: "max" },
      })
      .refine(
        (u) => {
          try {
            const url = new URL(u);
            return url.protocol === "https:" || url.protocol === "http:";
          } catch {
            return false;
          }
        },
        { error: "interactive.button.url must be an http or https URL.", params: { rule: "url" } },
      )
      .openapi({ format: "uri", example: "https://shop.example.com/track/1042" }),
  }),
});

export const InteractiveContent = z
  .discriminatedUnion("type", [Buttons, List, CtaUrl], {
    error: 'interactive.type must be "button", "list" or "cta_url".',
  })
  .superRefine((m, ctx) => {
    if (m.type === "button") {
      uniqueBy(
        m.buttons,
        (b) => b.id,
        ctx,
        (i) => ["buttons", i, "id"],
        "A button id",
      );
      uniqueBy(
        m.buttons,
        (b) => b.title,
        ctx,
        (i) => ["buttons", i, "title"],
        "A button title",
      );
    }
    if (m.type === "list") {
      const rows = m.sections.flatMap((s, si) => s.rows.map((r, ri) => ({ r, si, ri })));
      if (rows.length > L.rows)
        ctx.addIssue({
          code: "custom",
          path: ["sections"],
          message: `A list holds at most ${L.rows} rows in all sections together; this one has ${rows.length}.`,
          params: { rule: "max" },
        });
      uniqueBy(
        rows,
        (x) => x.r.id,
        ctx,
        (i) => ["sections", rows[i]!.si, "rows", rows[i]!.ri, "id"],
        "A row id",
      );
      if (m.sections.length > 1)
        m.sections.forEach((s, i) => {
          if (s.title === undefined)
            ctx.addIssue({
              code: "custom",
              path: ["sections", i, "title"],
              message: "Each section needs a title once a list has more than one.",
              params: { rule: "required" },
            });
        });
    }
  })
  .openapi("InteractiveContent", {
    description:
      "Reply buttons (`button`: 1 to 3), a list (`list`: up to 10 sections, 10 rows in all) or a call-to-action URL " +
      "button (`cta_url`), with the operator's limits on each field.",
  });
export type InteractiveContent = z.infer<typeof InteractiveContent>;

type Header = NonNullable<Extract<InteractiveContent, { type: "button" }>["header"]>;
const headerPayload = (h: Header) =>
  h.type === "text" ? { type: "text", text: h.text } : { type: h.type, [h.type]: { link: h.link } };

/** The operator's `interactive` object for a request's. */
function operatorInteractive(m: InteractiveContent): Record<string, unknown> {
  const common = {
    type: m.type,
    ...(m.header ? { header: headerPayload(m.header) } : {}),
    body: { text: m.body },
    ...(m.footer !== undefined ? { footer: { text: m.footer } } : {}),
  };
  switch (m.type) {
    case "button":
      return {
        ...common,
        action: { buttons: m.buttons.map((b) => ({ type: "reply", reply: { id: b.id, title: b.title } })) },
      };
    case "list":
      return {
        ...common,
        action: {
          button: m.button,
          sections: m.sections.map((s) => ({
            ...(s.title !== undefined ? { title: s.title } : {}),
            rows: s.rows.map((r) => ({
              id: r.id,
              title: r.title,
              ...(r.description !== undefined ? { description: r.description } : {}),
            })),
          })),
        },
      };
    case "cta_url":
      return {
        ...common,
        action: { name: "cta_url", parameters: { display_text: m.button.text, url: m.button.url } },
      };
  }
}

/**
 * What an interactive send records: the operator's `interactive` object (`content`), the request's
 * (`details`, what the v2 view shows) and its body text as the `body` (a list's at most 4,096
 * characters, as a text message's).
 */
export function interactiveContent(m: InteractiveContent): OutboundContent {
  return {
    type: "interactive",
    body: m.body,
    content: JSON.stringify(operatorInteractive(m)),
    details: JSON.stringify({ interactive: m }),
  };
}
