import { Hono } from "hono";
import type { Context } from "hono";
import { listConnectedNumbers, type ChannelNumberRow } from "../../db/channel-numbers";
import { toFilter } from "../../messages/list";
import { listMessagePageAs } from "../../features/messages/message-page";
import { ApiError } from "../../lib/errors";
import type { DashboardEnv } from "../context";
import { Choice, describedBy, FieldError, Time, TableScroll } from "../components";
import {
  counterpartOf,
  NumberLink,
  numberLabels,
  preview,
  shownMessage,
  StatusLine,
  type NumberLabels,
  type ShownMessage,
} from "../message-parts";
import {
  listHref,
  PAGE_SIZES,
  parseFilters,
  toLocalField,
  type FilterProblem,
  type FilterValues,
} from "../message-filters";

// A plan allows at most 100 numbers: one query lists them all for the number filter.
const MAX_NUMBERS = 100;
/**
 * The workspace object reads a bounded number of rows per list call, so a
 * selective filter can come back short (even empty) while older matches
 * exist. The page asks again from where the last call stopped, up to this
 * many calls, before it shows what it has and an "Older" link.
 */
export const LIST_CALLS_PER_PAGE = 4;

type Errors = Partial<Record<FilterProblem, string>>;

function Text({
  field,
  label,
  values,
  errors,
  placeholder,
}: {
  field: "to" | "from";
  label: string;
  values: FilterValues;
  errors: Errors;
  placeholder: string;
}) {
  return (
    <div class="field">
      <label for={`f-${field}`}>{label}</label>
      <input
        id={`f-${field}`}
        name={field}
        type="text"
        inputmode="tel"
        autocomplete="off"
        maxlength={160}
        placeholder={placeholder}
        value={values[field] ?? ""}
        {...describedBy(field, errors)}
      />
      <FieldError field={field} message={errors[field]} />
    </div>
  );
}

function When({
  field,
  label,
  values,
  errors,
}: {
  field: "createdAfter" | "createdBefore";
  label: string;
  values: FilterValues;
  errors: Errors;
}) {
  return (
    <div class="field">
      <label for={`f-${field}`}>{label}</label>
      <input
        id={`f-${field}`}
        name={field}
        type="datetime-local"
        step={1}
        value={toLocalField(values[field])}
        {...describedBy(field, errors)}
      />
      <FieldError field={field} message={errors[field]} />
    </div>
  );
}

function FilterForm({
  values,
  limit,
  errors,
  numbers,
}: {
  values: FilterValues;
  limit: string;
  errors: Errors;
  numbers: ChannelNumberRow[];
}) {
  const numberOptions: [string, string][] = [
    ["", "Any number"],
    ...numbers.map((n): [string, string] => [n.id, n.display_phone_number]),
  ];
  // A number that is no longer connected still filters its messages.
  if (values.channelNumberId && !numbers.some((n) => n.id === values.channelNumberId)) {
    numberOptions.push([values.channelNumberId, values.channelNumberId]);
  }
  return (
    <form method="get" action="/dashboard/messages" class="filters card" aria-label="Filter messages">
      <Choice
        field="direction"
        label="Direction"
        values={values}
        errors={errors}
        options={[
          ["", "Any"],
          ["outbound", "Outbound (sent by you)"],
          ["inbound", "Inbound (received)"],
        ]}
      />
      <Choice
        field="status"
        label="Status"
        values={values}
        errors={errors}
        options={[
          ["", "Any"],
          ["queued", "queued"],
          ["processing", "processing"],
          ["sent", "sent"],
          ["failed", "failed"],
          ["received", "received (inbound)"],
        ]}
      />
      <Choice field="channelNumberId" label="Number" values={values} errors={errors} options={numberOptions} />
      <Text field="to" label="Recipient (to)" placeholder="5511999998888" values={values} errors={errors} />
      <Text field="from" label="Sender (from)" placeholder="5511977776666" values={values} errors={errors} />
      <When field="createdAfter" label="Created after (UTC)" values={values} errors={errors} />
      <When field="createdBefore" label="Created before (UTC)" values={values} errors={errors} />
      <div class="field">
        <label for="f-limit">Per page</label>
        <select id="f-limit" name="limit" {...describedBy("limit", errors)}>
          {[...PAGE_SIZES, ...(PAGE_SIZES.some((size) => size === limit) ? [] : [limit])].map((size) => (
            <option value={size} selected={size === limit}>
              {size}
            </option>
          ))}
        </select>
        <FieldError field="limit" message={errors.limit} />
      </div>
      <div class="actions">
        <button type="submit">Apply filters</button> <a href="/dashboard/messages">Clear</a>
      </div>
    </form>
  );
}

function MessageTable({ messages, labels }: { messages: ShownMessage[]; labels: NumberLabels }) {
  return (
    <TableScroll label="Messages">
      <table>
        <thead>
          <tr>
            <th scope="col">Created</th>
            <th scope="col">Direction</th>
            <th scope="col">Status</th>
            <th scope="col">Number</th>
            <th scope="col">Contact</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {messages.map(({ m, v2 }) => (
            <tr>
              <td>
                <a href={`/dashboard/messages/${m.id}`}>
                  <Time iso={m.createdAt} />
                </a>
              </td>
              <td>{m.direction === "outbound" ? "out" : "in"}</td>
              <td>
                <StatusLine m={m} />
              </td>
              <td>
                <NumberLink id={m.channelNumberId} labels={labels} />
              </td>
              <td>
                <span class="visually-hidden">{m.direction === "outbound" ? "to " : "from "}</span>
                <code>{counterpartOf(m)}</code>
              </td>
              <td class="preview">{preview(v2)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

async function render(c: Context<DashboardEnv>) {
  const { workspace_id: workspaceId } = c.get("session");
  const parsed = parseFilters(c.req.query());
  const numbers = await listConnectedNumbers(c.env.DB, workspaceId, MAX_NUMBERS);
  let errors: Errors = parsed.ok ? {} : parsed.errors;
  let listed: { messages: ShownMessage[]; nextCursor: string | null } | null = null;
  if (parsed.ok) {
    try {
      listed = await listMessagePageAs(
        c.env,
        workspaceId,
        toFilter(parsed.query),
        parsed.query,
        shownMessage,
        LIST_CALLS_PER_PAGE,
      );
    } catch (err) {
      // decodeMessageCursor: a cursor of another workspace, or a damaged link.
      if (!(err instanceof ApiError)) throw err;
      errors = {
        cursor:
          "This page link is not one of this workspace's message pages (it may be damaged or from another workspace).",
      };
    }
  }
  const filtered = Object.keys(parsed.values).length > 0;
  const cursor = parsed.ok ? parsed.query.cursor : undefined;
  const labels = listed
    ? await numberLabels(
        c.env.DB,
        workspaceId,
        numbers,
        listed.messages.map(({ m }) => m.channelNumberId),
      )
    : new Map();
  if (!listed) c.status(400);
  return c.render(
    <>
      <h1>Messages</h1>
      <p>
        Outbound and inbound messages of the last days of history (30 on pro and scale, 7 on free), newest first. Older
        days are in the message archives (<code>GET /api/v1/message-archives</code>).
      </p>
      <FilterForm values={parsed.values} limit={parsed.limit} errors={errors} numbers={numbers} />
      {!listed ? (
        <div class="problem">
          <p class="form-error">{errors.cursor ?? "Some filters are not valid: see the marked fields."}</p>
          {errors.cursor ? (
            <p>
              <a href={listHref(parsed.values, parsed.limit)}>Start from the newest messages</a>
            </p>
          ) : null}
        </div>
      ) : (
        <section aria-labelledby="results-heading">
          <h2 id="results-heading">{filtered ? "Matching messages" : "All messages"}</h2>
          {listed.messages.length > 0 ? (
            <MessageTable messages={listed.messages} labels={labels} />
          ) : listed.nextCursor ? (
            <p>No match among the messages read for this page; older ones may match.</p>
          ) : filtered ? (
            <p>No message matches these filters.</p>
          ) : (
            <p>
              No messages yet. Send one with <code>POST /api/v1/messages</code> and it shows up here.
            </p>
          )}
          <p class="pager">
            {cursor ? <a href={listHref(parsed.values, parsed.limit)}>Newest</a> : null}
            {listed.nextCursor ? (
              <a href={listHref(parsed.values, parsed.limit, listed.nextCursor)} rel="next">
                Older
              </a>
            ) : null}
          </p>
        </section>
      )}
    </>,
    { title: "Messages" },
  );
}

export const messagesPage = new Hono<DashboardEnv>().get("/messages", (c) => render(c));
