import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";

/**
 * One unit of an object's timed work (publishing events, a retention purge, a
 * drain session). `due` reads storage through an index and is cheap; `run` does
 * a bounded amount of work and leaves the rest for the next alarm.
 */
export interface ScheduledStep {
  readonly name: string;
  /** When this step next has work (epoch ms), or null when it has none. */
  due(at: number): number | null;
  /**
   * When the alarm must run for it at the latest, if later than `due`: work that may wait (a few
   * bytes kept a little longer) rides on the alarms other steps set, and arms one of its own only then.
   */
  latest?(at: number): number | null;
  /**
   * Does a bounded amount of the work. Returns NO_PROGRESS when it could do nothing although it was
   * due (it waits on something outside itself): the scheduler then holds it back with a growing
   * delay, so that a step that cannot progress is never due in the past again.
   */
  run(at: number): Promise<void | typeof NO_PROGRESS>;
}

/** What a step's run returns when it was due and could do nothing (see ScheduledStep.run). */
export const NO_PROGRESS = "no-progress";

/**
 * Retention steps (purges, the move to history) run this long after their first row expires, so
 * that one alarm removes every row that expired meanwhile, in bounded batches, instead of one
 * alarm per row: each alarm is a billed request and its re-arming a billed row written. Rows are
 * therefore kept up to this much longer than their window; reads never rely on a purge (they
 * compare times), so nothing else changes.
 */
export const RETENTION_SLACK_MS = 5 * 60_000;

/** A retention step's due time, with the slack that lets expired rows gather into one run. */
export const withSlack = (due: number | null): number | null => (due === null ? null : due + RETENTION_SLACK_MS);

const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;
/**
 * A step that did nothing while due waits what a failing one waits, up to this: each alarm is a
 * billed request, and what it waits on (another step's work, a record's window) takes minutes.
 */
export const IDLE_BACKOFF_MAX_MS = 15 * 60_000;

/** Delay before a step that failed `failures` times in a row runs again: 1 s, 2 s, 4 s … 60 s (or `maxMs`), with ±20 % jitter. */
export function stepBackoffMs(
  failures: number,
  random: () => number = Math.random,
  maxMs: number = BACKOFF_MAX_MS,
): number {
  const base = Math.min(maxMs, BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * The single alarm of an object, shared by its steps. Each due step runs on its
 * own, inside its own try/catch, so a step that keeps failing (a queue refusing,
 * an RPC timing out) backs off alone and never starves the others; the alarm is
 * then set to the earliest time any step is due.
 */
export class Scheduler {
  private readonly failures = new Map<string, number>();
  /** Runs in a row that did nothing while due (NO_PROGRESS). */
  private readonly idle = new Map<string, number>();
  private readonly heldUntil = new Map<string, number>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly steps: readonly ScheduledStep[],
  ) {}

  /** Runs every due step once, then re-arms the alarm. Never throws. */
  async runDue(): Promise<void> {
    for (const step of this.steps) {
      const at = now();
      if ((this.heldUntil.get(step.name) ?? 0) > at) continue;
      let due: number | null;
      try {
        due = step.due(at);
        if (due === null || due > at) continue;
        const outcome = await step.run(at);
        this.failures.delete(step.name);
        this.heldUntil.delete(step.name);
        if (outcome === NO_PROGRESS) {
          // Due in the past and nothing done: it is not due again before its back-off ends.
          const idle = (this.idle.get(step.name) ?? 0) + 1;
          this.idle.set(step.name, idle);
          this.heldUntil.set(step.name, now() + stepBackoffMs(idle, Math.random, IDLE_BACKOFF_MAX_MS));
        } else this.idle.delete(step.name);
      } catch (err) {
        const failures = (this.failures.get(step.name) ?? 0) + 1;
        const wait = stepBackoffMs(failures);
        this.failures.set(step.name, failures);
        this.heldUntil.set(step.name, now() + wait);
        log("warn", "scheduled step failed; it backs off alone", {
          step: step.name,
          failures,
          retryInMs: wait,
          error: errorText(err),
        });
      }
    }
    await this.rearm();
  }

  /** The earliest time any step wants to run, honouring the back-off of failing steps. */
  nextWake(): number | null {
    let next: number | null = null;
    for (const step of this.steps) {
      let due: number | null;
      try {
        due = step.latest ? step.latest(now()) : step.due(now());
      } catch (err) {
        log("warn", "scheduled step could not tell when it is due", { step: step.name, error: errorText(err) });
        due = now() + BACKOFF_MAX_MS;
      }
      if (due === null) continue;
      due = Math.max(due, this.heldUntil.get(step.name) ?? 0);
      if (next === null || due < next) next = due;
    }
    return next;
  }

  /** Sets the alarm to the next due time (or clears it when nothing is due). */
  async rearm(): Promise<void> {
    const next = this.nextWake();
    if (next === null) {
      await this.storage.deleteAlarm();
      return;
    }
    await this.storage.setAlarm(Math.max(next, now()));
  }

  /**
   * Outside the alarm handler, after work was removed (a delivery report cleared an event's
   * check): re-arms only if the due time moved, since each `setAlarm()` is a billed row written.
   * A concurrent alarm run re-arms itself when it ends, so skipping here never loses a wake.
   */
  async rearmIfMoved(): Promise<void> {
    const next = this.nextWake();
    const current = await this.storage.getAlarm();
    if (next === null) {
      if (current !== null) await this.storage.deleteAlarm();
      return;
    }
    const t = now();
    const at = Math.max(next, t);
    // Unchanged, or already pending with work due: the alarm will run and re-arm itself.
    if (current === at || (current !== null && current <= t && next <= t)) return;
    await this.storage.setAlarm(at);
  }

  /** Makes sure the alarm fires no later than `at` (called when new work arrives). */
  async wake(at: number = now()): Promise<void> {
    const current = await this.storage.getAlarm();
    if (current === null || current > at) await this.storage.setAlarm(at);
  }

  /**
   * Called from the constructor: an object whose alarm was lost (storage
   * restored, an alarm deleted by a failed deploy) re-arms it from its own state.
   */
  async ensureArmed(): Promise<void> {
    if ((await this.storage.getAlarm()) !== null) return;
    const next = this.nextWake();
    if (next !== null) await this.storage.setAlarm(Math.max(next, now()));
  }
}
