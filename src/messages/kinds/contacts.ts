import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";
import { boundedText } from "./fields";

// A contacts message: one or more contact cards (WhatsApp Cloud API, "Contacts messages"). The
// operator's card requires a formatted name and takes names, phones, emails, URLs, addresses, an
// organization and a birthday (YYYY-MM-DD), in snake_case; ours takes the same in camelCase. The
// operator documents no counts or lengths: ours (10 cards, 10 entries of each list, 256
// characters a field) keep a record small.

export const CONTACTS_LIMITS = { cards: 10, entries: 10, field: 256 } as const;
const F = CONTACTS_LIMITS.field;

const field = (path: string, example?: string) =>
  boundedText(`contacts[].${path}`, F, example === undefined ? {} : { example }).optional();
const list = <T extends z.ZodType>(item: T, path: string) =>
  z
    .array(item)
    .max(CONTACTS_LIMITS.entries, { error: `contacts[].${path} holds at most ${CONTACTS_LIMITS.entries} entries.` })
    .optional();

const Card = z.strictObject({
  name: z.strictObject({
    formattedName: boundedText("contacts[].name.formattedName", F, { example: "Ana Souza" }),
    firstName: field("name.firstName", "Ana"),
    lastName: field("name.lastName", "Souza"),
    middleName: field("name.middleName"),
    prefix: field("name.prefix"),
    suffix: field("name.suffix"),
  }),
  phones: list(
    z.strictObject({
      phone: boundedText("contacts[].phones[].phone", F, { example: "+55 11 99999-8888" }),
      type: field("phones[].type", "WORK"),
      waId: field("phones[].waId", "5511999998888"),
    }),
    "phones",
  ),
  emails: list(
    z.strictObject({
      email: boundedText("contacts[].emails[].email", F, { example: "ana@example.com" }),
      type: field("emails[].type", "WORK"),
    }),
    "emails",
  ),
  urls: list(
    z.strictObject({
      url: boundedText("contacts[].urls[].url", F, { example: "https://example.com" }),
      type: field("urls[].type", "WORK"),
    }),
    "urls",
  ),
  addresses: list(
    z.strictObject({
      street: field("addresses[].street"),
      city: field("addresses[].city"),
      state: field("addresses[].state"),
      zip: field("addresses[].zip"),
      country: field("addresses[].country"),
      countryCode: field("addresses[].countryCode"),
      type: field("addresses[].type"),
    }),
    "addresses",
  ),
  org: z
    .strictObject({ company: field("org.company"), department: field("org.department"), title: field("org.title") })
    .optional(),
  birthday: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: "contacts[].birthday is a date: YYYY-MM-DD." })
    .optional()
    .openapi({ example: "1990-04-21" }),
});

export const ContactsContent = z
  .array(Card, { error: "contacts must be an array of contact cards." })
  .min(1, { error: "contacts needs at least one card." })
  .max(CONTACTS_LIMITS.cards, { error: `contacts holds at most ${CONTACTS_LIMITS.cards} cards.` })
  .openapi("ContactsContent", { description: "Contact cards, each with at least a `name.formattedName`." });
export type ContactsContent = z.infer<typeof ContactsContent>;

const SNAKE: Record<string, string> = {
  formattedName: "formatted_name",
  firstName: "first_name",
  lastName: "last_name",
  middleName: "middle_name",
  waId: "wa_id",
  countryCode: "country_code",
};

/** The request's words in the operator's (camelCase keys to its snake_case ones, at any depth). */
function operatorWords(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(operatorWords);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [SNAKE[k] ?? k, operatorWords(v)]));
  return value;
}

/** What a contacts send records: the operator's `contacts` list, the request's (`details`), and the names as a summary. */
export function contactsContent(cards: ContactsContent): OutboundContent {
  return {
    type: "contacts",
    body: `[contacts] ${cards.map((c) => c.name.formattedName).join(", ")}`,
    content: JSON.stringify(operatorWords(cards)),
    details: JSON.stringify({ contacts: cards }),
  };
}
