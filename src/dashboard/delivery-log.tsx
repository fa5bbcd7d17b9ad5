import type { toDeliveryView } from "../domain/webhook-view";
import { Time, TableScroll } from "./components";

export type DeliveryView = ReturnType<typeof toDeliveryView>;

/** When the queue tries the event again: shown on the event's newest attempt only (older ones were retried already). */
const nextRetry = (row: DeliveryView, newestOfEvent: boolean): string | null =>
  newestOfEvent ? row.nextRetryAt : null;

/** Delivery attempts, newest first; with `canReplay`, a replay button on each event's newest attempt. */
export function DeliveryLog({
  rows,
  numberId,
  canReplay,
  label = "Delivery log",
}: {
  rows: DeliveryView[];
  numberId: string;
  canReplay: boolean;
  label?: string;
}) {
  const seen = new Set<string>();
  return (
    <TableScroll label={label}>
      <table>
        <thead>
          <tr>
            <th scope="col">Attempted</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Outcome</th>
            <th scope="col">HTTP</th>
            <th scope="col">Latency</th>
            <th scope="col">Next retry</th>
            {canReplay ? (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const newest = !seen.has(r.eventId);
            seen.add(r.eventId);
            const retry = nextRetry(r, newest);
            return (
              <tr>
                <td>
                  <Time iso={r.attemptedAt} />
                </td>
                <td>
                  {r.eventType ?? "?"}
                  <br />
                  <code class="small">{r.eventId}</code>
                </td>
                <td>{r.attempt}</td>
                <td>
                  <span class={r.outcome === "delivered" ? "ok" : "bad"}>{r.outcome}</span>
                  {r.error ? <p class="small">{r.error}</p> : null}
                </td>
                <td>{r.statusCode ?? "—"}</td>
                <td>{r.latencyMs === null ? "—" : `${r.latencyMs} ms`}</td>
                <td>{retry ? <Time iso={retry} /> : "—"}</td>
                {canReplay ? (
                  <td>
                    {newest ? (
                      <form
                        method="post"
                        action={`/dashboard/webhooks/${numberId}/deliveries/${encodeURIComponent(r.eventId)}/replay`}
                        class="inline"
                      >
                        <button type="submit" class="secondary" aria-label={`Replay event ${r.eventId}`}>
                          Replay
                        </button>
                      </form>
                    ) : null}
                  </td>
                ) : null}
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroll>
  );
}
