import type { NumberHealthView } from "../../domain/number-health";
import type { NumberSendingState } from "../../domain/channel-number-view";
import { CONFIRM_PROBE_MS } from "../../engine/numbers";
import { Time } from "../../dashboard/components";

const STATE_LABEL = { active: "active", paused: "paused", disconnected: "disconnected" } as const;

/** The number's state in a few words, for a table cell: "paused since …" says since when. */
export function HealthState({ health }: { health: NumberHealthView }) {
  return (
    <span class={`state state-${health.state}`}>
      {STATE_LABEL[health.state]}
      {health.pausedSince ? (
        <>
          {" "}
          since <Time iso={health.pausedSince} />
        </>
      ) : null}
      {health.unverifiedSince ? " · unverified (replace its token)" : null}
    </span>
  );
}

/** "GREEN · TIER_1K", or "—" for a sandbox number (the operator rates live numbers only). */
export const qualityAndTier = (h: NumberHealthView): string =>
  h.qualityRating || h.messagingLimitTier ? `${h.qualityRating ?? "—"} · ${h.messagingLimitTier ?? "—"}` : "—";

/** The health facts of a number's page; `sending` (its object's state) says when a paused number tries again. */
export function HealthFacts({ health, sending }: { health: NumberHealthView; sending?: NumberSendingState | null }) {
  const paused = sending?.paused ?? null;
  const notice = health.lastOperatorNotice;
  return (
    <>
      <dt>State</dt>
      <dd>
        <HealthState health={health} />
        {health.pausedReason ? <p class="hint">{health.pausedReason}</p> : null}
        {paused ? (
          <p class="hint">
            Sends are still accepted and wait in order (at most 24 hours). Next attempt with one message:{" "}
            <Time iso={paused.nextAttemptAt} />
            {paused.reportedBy === "webhook"
              ? `; the operator accepts the messages of such an account and fails them afterwards, so the number resumes only once one goes through with no failure reported for ${CONFIRM_PROBE_MS / 60_000} minutes.`
              : "; the number resumes when it goes through, or at once when its access token is replaced."}
          </p>
        ) : null}
      </dd>
      {health.unverifiedSince ? (
        <>
          <dt>Connection</dt>
          <dd class="state state-unverified">
            unverified since <Time iso={health.unverifiedSince} />
            <p class="hint">
              The operator refused this number's access token. Until an owner replaces the token below, messages that
              customers send to this number are recorded without their content, and anyone who proves control of the
              number with the operator (its phone number id, business account and a working token) can connect it to
              their own workspace, which disconnects it here. To fix it, generate a new token for the number at the
              operator and replace it on this page.
            </p>
          </dd>
        </>
      ) : null}
      <dt>Verified name</dt>
      <dd>{health.verifiedName ?? "—"}</dd>
      <dt>Quality · messaging limit tier</dt>
      <dd>
        {qualityAndTier(health)}
        {health.checkedAt ? (
          <span class="hint">
            {" "}
            (operator asked <Time iso={health.checkedAt} />, at most hourly)
          </span>
        ) : null}
      </dd>
      <dt>Last operator error</dt>
      <dd>{health.lastOperatorError ?? "none"}</dd>
      <dt>Last operator notice</dt>
      <dd>
        {notice ? (
          <>
            {notice.message}
            {notice.upstreamCode ? ` (operator code ${notice.upstreamCode})` : ""}{" "}
            <span class="hint">
              ({notice.field} webhook, <Time iso={notice.at} />)
            </span>
          </>
        ) : (
          "none"
        )}
      </dd>
      <dt>Sends today</dt>
      <dd>
        {health.sendsToday} <span class="hint">(UTC day; up to a minute behind)</span>
      </dd>
    </>
  );
}
