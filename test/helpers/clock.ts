import { afterEach, beforeEach, onTestFinished, vi } from "vitest";

/**
 * The suite's one controlled clock. Only `Date` is faked: the Worker reads the time through
 * src/lib/clock.ts (`Date.now()`), and its objects run in the tests' isolate, so they see what a
 * test sets; timers stay real, for the runtime's own I/O and for vi.waitFor. Far-future times keep
 * the objects' alarms from firing on their own: each step runs when a test runs it.
 */
export interface TestClock {
  /** The time the Worker reads (the last one set: with `advancing`, real time runs on from it). */
  now(): number;
  /** Moves the clock to `ms`, forward or back. */
  set(ms: number): void;
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
}

let current = 0;

const clock: TestClock = {
  now: () => current,
  set: (ms) => {
    current = ms;
    vi.setSystemTime(ms);
  },
  advance: (ms) => clock.set(current + ms),
};

const fakeDate = (at: number, advancing: boolean) => {
  vi.useFakeTimers(advancing ? { toFake: ["Date"], shouldAdvanceTime: true } : { toFake: ["Date"] });
  clock.set(at);
};

/**
 * Inside one test: the clock set to `at` (now, by default) until the test ends. `advancing`: time
 * runs on from there in real time (a drain session's overlap needs it to).
 */
export function fakeClock(at: number = Date.now(), opts: { advancing?: boolean } = {}): TestClock {
  fakeDate(at, opts.advancing ?? false);
  onTestFinished(() => {
    vi.useRealTimers();
  });
  return clock;
}

/**
 * For every test of a file: the clock faked before each test, at `next` of where the last one left
 * it (the first test: `next(first)`), so that each test has a stretch of time of its own.
 */
export function fakeClockPerTest(first: number, next: (previous: number) => number): TestClock {
  current = first;
  beforeEach(() => fakeDate(next(current), false));
  afterEach(() => vi.useRealTimers());
  return clock;
}
