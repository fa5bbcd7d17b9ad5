/**
 * One scheduled job: independent of the others, bounded (every statement
 * LIMITed), and returning how many rows it handled. A job that has more to do
 * than one run allows simply continues at the next run.
 */
export interface ScheduledJob {
  name: string;
  run(env: Env, now: number): Promise<number>;
}
