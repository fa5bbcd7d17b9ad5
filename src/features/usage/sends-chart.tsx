import type { DailyUsage } from "../../engine/usage";
import { DAY_MS } from "../../lib/job-id";

/**
 * Sends per day of the current period as an inline SVG bar chart, with the
 * previous period's days behind them, lighter (day 1 behind day 1). No script
 * and no style attribute (the CSP allows neither): colours come from classes
 * of the stylesheet, so they follow the light and dark palettes. Screen
 * readers get the chart's title and a summary (`<desc>`); everyone can open
 * the numbers as tables.
 */

// Drawing units. The SVG scales to its box (at most 30rem wide): narrow enough
// that the 13-unit labels stay readable at 375 px (about 10 px) and on a desktop (about 16 px).
const W = 400;
const H = 180;
const FONT = "13";
const LEFT = 40;
const RIGHT = 8;
const TOP = 12;
const BOTTOM = 28;
const PLOT_W = W - LEFT - RIGHT;
const PLOT_H = H - TOP - BOTTOM;
const LABELLED_DAYS = [1, 8, 15, 22, 29];

/** The smallest 1, 2 or 5 × 10ⁿ at or above `v`: round gridline values. */
function niceCeiling(v: number): number {
  if (v <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * power).find((n) => n >= v)!;
}

const fmt = (n: number) => n.toLocaleString("en-US");
const sends = (n: number) => `${fmt(n)} send${n === 1 ? "" : "s"}`;
const r1 = (n: number) => Math.round(n * 10) / 10;
const monthName = (iso: string) =>
  new Date(iso).toLocaleString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });
const total = (days: DailyUsage[]) => days.reduce((sum, d) => sum + d.accepted, 0);

function Summary({
  current,
  previous,
  periodStart,
  previousStart,
}: {
  current: DailyUsage[];
  previous: DailyUsage[];
  periodStart: string;
  previousStart: string;
}) {
  const busiest = current.reduce<DailyUsage | null>((best, d) => (d.accepted > (best?.accepted ?? 0) ? d : best), null);
  const activeDays = current.filter((d) => d.accepted > 0).length;
  return (
    <>
      {`${monthName(periodStart)}: ${sends(total(current))} so far`}
      {activeDays > 0 ? `, on ${activeDays} day${activeDays === 1 ? "" : "s"}` : ""}
      {busiest ? `; the busiest day was ${busiest.day} with ${fmt(busiest.accepted)}` : ""}
      {`. ${monthName(previousStart)}: ${sends(total(previous))}.`}
    </>
  );
}

const active = (d: DailyUsage) => d.accepted + d.sent + d.failed + d.received > 0;

/** The days with any message, newest first (the others had none). */
function DailyTable({ caption, days }: { caption: string; days: DailyUsage[] }) {
  if (!days.some(active)) return <p>{`${caption}: no messages.`}</p>;
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Day (UTC)</th>
          <th scope="col">Sends</th>
          <th scope="col">Sent</th>
          <th scope="col">Failed</th>
          <th scope="col">Received</th>
        </tr>
      </thead>
      <tbody>
        {days
          .filter(active)
          .reverse()
          .map((d) => (
            <tr>
              <th scope="row">{d.day}</th>
              <td>{fmt(d.accepted)}</td>
              <td>{fmt(d.sent)}</td>
              <td>{fmt(d.failed)}</td>
              <td>{fmt(d.received)}</td>
            </tr>
          ))}
      </tbody>
    </table>
  );
}

export function SendsChart({ daily, period }: { daily: DailyUsage[]; period: { start: string; end: string } }) {
  const startDay = period.start.slice(0, 10);
  const current = daily.filter((d) => d.day >= startDay);
  const previous = daily.filter((d) => d.day < startDay);
  const previousStart = previous[0]
    ? `${previous[0].day}T00:00:00.000Z`
    : new Date(Date.parse(period.start) - DAY_MS).toISOString();
  const days = Math.round((Date.parse(period.end) - Date.parse(period.start)) / DAY_MS);
  const slot = PLOT_W / days;
  const shownPrevious = previous.slice(0, days);
  const top = niceCeiling(Math.max(...current.map((d) => d.accepted), ...shownPrevious.map((d) => d.accepted), 1));
  const y = (v: number) => r1(TOP + PLOT_H - (v / top) * PLOT_H);
  const gridlines = top % 2 === 0 ? [0, top / 2, top] : [0, top];
  const bar = (d: DailyUsage, i: number, cls: "prev" | "cur", inset: number) =>
    d.accepted === 0 ? null : (
      <rect
        class={cls}
        x={r1(LEFT + i * slot + slot * inset)}
        y={y(d.accepted)}
        width={r1(slot * (1 - 2 * inset))}
        height={r1(TOP + PLOT_H - y(d.accepted))}
      >
        <title>{`${d.day}: ${sends(d.accepted)}`}</title>
      </rect>
    );
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="sends-title" aria-describedby="sends-desc">
        <title id="sends-title">Sends per day</title>
        <desc id="sends-desc">
          <Summary current={current} previous={previous} periodStart={period.start} previousStart={previousStart} />
        </desc>
        {gridlines.map((v) => (
          <>
            <line class="grid" x1={LEFT} x2={W - RIGHT} y1={y(v)} y2={y(v)} />
            <text class="axis" x={LEFT - 6} y={r1(y(v) + 4)} text-anchor="end" font-size={FONT}>
              {fmt(v)}
            </text>
          </>
        ))}
        {shownPrevious.map((d, i) => bar(d, i, "prev", 0.08))}
        {current.map((d, i) => bar(d, i, "cur", 0.28))}
        {LABELLED_DAYS.filter((d) => d <= days).map((d) => (
          <text class="axis" x={r1(LEFT + (d - 0.5) * slot)} y={H - 8} text-anchor="middle" font-size={FONT}>
            {String(d)}
          </text>
        ))}
      </svg>
      <figcaption>
        <span class="swatch cur" aria-hidden="true"></span> {monthName(period.start)} (day of the month){" "}
        <span class="swatch prev" aria-hidden="true"></span> {monthName(previousStart)}
      </figcaption>
      <details>
        <summary>Sends per day as a table</summary>
        <div class="table-wrap">
          <p>Days without any message are left out.</p>
          <DailyTable caption={monthName(period.start)} days={current} />
          <DailyTable caption={monthName(previousStart)} days={previous} />
        </div>
      </details>
    </figure>
  );
}
