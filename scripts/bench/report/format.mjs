// `npm run bench`: how the report writes its figures ("n/a" for a figure not measured).

/** @typedef {number | null | undefined} Figure */

/** @param {Figure} n */
export const f0 = (n) => (n === null || n === undefined ? "n/a" : Math.round(n).toLocaleString("en-US"));
/** @param {Figure} n */
export const f1 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(1));
/** @param {Figure} n */
export const f2 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(2));
/** @param {Figure} n */
export const f3 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(3));
/** A relative change: "+12%", "−3%", "±0%". @param {number} x */
export const pct = (x) => (Math.round(x * 100) === 0 ? "±0%" : `${x > 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(0)}%`);
/** @param {number} bytes */
export const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
