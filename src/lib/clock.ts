// The single source of "now". Tests move it with vitest's fake timers
// (vi.setSystemTime), which also reaches Durable Objects because they run in the
// same isolate as the tests.
export const now = (): number => Date.now();

export const isoNow = (): string => new Date(now()).toISOString();

/** The calendar month (UTC) that contains `ms`, as `YYYY-MM`, with its bounds. */
export function monthPeriod(ms: number): { key: string; start: string; end: string } {
  const d = new Date(ms);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return {
    key: new Date(start).toISOString().slice(0, 7),
    start: new Date(start).toISOString(),
    end: new Date(end).toISOString(),
  };
}
