import type { StoredTemplate } from "../domain/template";
import { normalizeTemplate, OperatorTemplate } from "../domain/template";

/**
 * The templates every sandbox number has, written as the operator lists them so that they go
 * through the same normalization as synced ones: one per way of filling placeholders
 * (positional, named), one in a second language, and one PAUSED (sends refused before queueing,
 * as for a live account's paused template).
 */
const BUILT_IN = [
  {
    name: "order_update",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    parameter_format: "POSITIONAL",
    components: [
      { type: "HEADER", format: "TEXT", text: "Order {{1}}" },
      { type: "BODY", text: "Hi {{1}}, your order {{2}} has shipped and arrives on {{3}}." },
      { type: "FOOTER", text: "Sandbox" },
      {
        type: "BUTTONS",
        buttons: [{ type: "URL", text: "Track", url: "https://example.com/track/{{1}}" }],
      },
    ],
  },
  {
    name: "order_update",
    language: "pt_BR",
    status: "APPROVED",
    category: "UTILITY",
    parameter_format: "POSITIONAL",
    components: [{ type: "BODY", text: "Olá {{1}}, seu pedido {{2}} foi enviado e chega em {{3}}." }],
  },
  {
    name: "appointment_reminder",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    parameter_format: "NAMED",
    components: [{ type: "BODY", text: "Hello {{first_name}}, see you on {{date}} at {{time}}." }],
  },
  {
    name: "spring_sale",
    language: "en_US",
    status: "PAUSED",
    category: "MARKETING",
    parameter_format: "POSITIONAL",
    components: [{ type: "BODY", text: "Spring sale: {{1}} off everything until Sunday." }],
  },
] as const;

export const SANDBOX_ACCOUNT = "sandbox";

export const SANDBOX_TEMPLATES: readonly StoredTemplate[] = BUILT_IN.map((t) => {
  const normalized = normalizeTemplate(OperatorTemplate.parse(t));
  if (!normalized) throw new Error(`built-in template ${t.name} has no body`);
  return { ...normalized, account: SANDBOX_ACCOUNT, syncedAt: null };
}).sort((a, b) => (a.name === b.name ? (a.language < b.language ? -1 : 1) : a.name < b.name ? -1 : 1));

/** A built-in template by name and language. */
export const sandboxTemplate = (name: string, language: string): StoredTemplate | undefined =>
  SANDBOX_TEMPLATES.find((t) => t.name === name && t.language === language);
