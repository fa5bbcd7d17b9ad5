// A seeded random source for `npm run soak`, so that a run's fault plan can be repeated with --seed.

/** @typedef {ReturnType<typeof seededRandom>} Random */

/** mulberry32: small, fast, good enough for choosing faults (not for secrets). @param {number} seed */
export function seededRandom(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** Uniform in [min, max). */
    between: (/** @type {number} */ min, /** @type {number} */ max) => min + next() * (max - min),
    chance: (/** @type {number} */ p) => next() < p,
    /** One of `items` (not empty). @template T @param {T[]} items @returns {T} */
    pick: (items) => /** @type {T} */ (items[Math.floor(next() * items.length)]),
    /** Exponential inter-arrival time (ms) for `perSecond` events per second. */
    interval: (/** @type {number} */ perSecond) => (-Math.log(1 - next()) / perSecond) * 1000,
  };
}
