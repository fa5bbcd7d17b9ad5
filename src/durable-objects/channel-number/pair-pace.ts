/**
 * The operator's pair rate: about one message every 6 seconds to the same
 * user, with bursts of up to 45 borrowed from future quota (WhatsApp Cloud
 * API, "Throughput": pair rate limit, error 131056). Each conversation of a
 * number is paced with a GCRA bucket of that shape, so a number sending 2/s to
 * one user does not run into 131056 errors, while other users are not held up.
 *
 * In memory only (a bucket written with every call was a row per message): after
 * a restart every bucket starts full, so a conversation the number was pacing may
 * send up to a burst early; the operator then answers 131056 for it, which backs
 * off that conversation alone (delivery-policy.ts) and never fails or doubles a message.
 * Bound: one entry (~60 B) per recipient called in the last 45 × 6 s; idle ones are dropped.
 */
export const PAIR_INTERVAL_MS = 6_000;
export const PAIR_BURST = 45;

export class PairPace {
  private readonly tat = new Map<string, number>();

  /** The earliest a message to `recipient` may be called, at `at` or later. */
  readyAt(recipient: string, at: number): number {
    const tat = this.tat.get(recipient);
    if (tat === undefined) return at;
    return Math.max(at, tat - (PAIR_BURST - 1) * PAIR_INTERVAL_MS);
  }

  /** Records a call to `recipient` at `at`. */
  noteCall(recipient: string, at: number): void {
    this.tat.set(recipient, Math.max(this.tat.get(recipient) ?? at, at) + PAIR_INTERVAL_MS);
    if (this.tat.size > 10_000) this.sweep(at);
  }

  /** Forgets buckets full again. */
  sweep(at: number): void {
    for (const [recipient, tat] of this.tat) if (tat <= at) this.tat.delete(recipient);
  }
}
