import type { NumberHealthView } from "../domain/number-health";
import { Time } from "./components";

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
    </span>
  );
}

/** "GREEN · TIER_1K", or "—" for a sandbox number (the operator rates live numbers only). */
export const qualityAndTier = (h: NumberHealthView): string =>
  h.qualityRating || h.messagingLimitTier ? `${h.qualityRating ?? "—"} · ${h.messagingLimitTier ?? "—"}` : "—";

/** The health facts of a number's page. */
export function HealthFacts({ health }: { health: NumberHealthView }) {
  return (
    <>
      <dt>State</dt>
      <dd>
        <HealthState health={health} />
        {health.pausedReason ? <p class="hint">{health.pausedReason}</p> : null}
      </dd>
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
      <dt>Sends today</dt>
      <dd>
        {health.sendsToday} <span class="hint">(UTC day; up to a minute behind)</span>
      </dd>
    </>
  );
}
