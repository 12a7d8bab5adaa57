/*
 * The current time as Date#toISOString writes it (`2026-12-07T12:34:56.789Z`), for the audit
 * log's `at`, which every committed decision stamps. Building a Date and formatting all of it
 * on every commit costs more than the row's other fields; within one UTC minute only the
 * seconds and milliseconds change, so the text up to the minute is kept and reused.
 *
 *   isoTime(ms) ─► inside the kept minute?  kept 'YYYY-MM-DDTHH:MM:' + 'SS.mmmZ'
 *               └► otherwise                 Date#toISOString, and its minute is kept
 *
 * A clock set back, or a time outside years 0–9999 (a six-digit year), takes the full path.
 */
let start = Number.NaN;
let prefix = '';

export function isoTime(ms: number = Date.now()): string {
  const t = Math.floor(ms);
  const into = t - start;
  if (into >= 0 && into < 60_000) {
    const s = Math.floor(into / 1000);
    const m = into - s * 1000;
    return `${prefix}${s < 10 ? '0' : ''}${s}.${m < 10 ? '00' : m < 100 ? '0' : ''}${m}Z`;
  }
  const text = new Date(t).toISOString();
  if (text.length === 24) {
    start = t - (((t % 60_000) + 60_000) % 60_000);
    prefix = text.slice(0, 17);
  } else start = Number.NaN;
  return text;
}
