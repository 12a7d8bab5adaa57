// The audit log's timestamps: isoTime writes what Date#toISOString writes, whatever the
// order of the times it is asked about, even as it reuses the minute it wrote last.
import t from 'tap';
import { isoTime } from '../../src/util/iso-time.js';

const iso = (ms: number) => new Date(ms).toISOString();

t.test('a time is written as toISOString writes it, across second, minute, hour, day and year boundaries', async (t) => {
  const edges = [Date.UTC(2026, 11, 31, 23, 59, 58, 990), Date.UTC(2024, 1, 28, 23, 59, 59, 0), Date.UTC(1999, 11, 31, 23, 59, 0, 0), 0, 59_999];
  const wrong: string[] = [];
  for (const edge of edges) for (let ms = edge; ms < edge + 3_000; ms += 7) if (isoTime(ms) !== iso(ms)) wrong.push(`${ms}: ${isoTime(ms)}`);
  t.same(wrong, [], 'every millisecond stepped through writes the same text');
  t.equal(isoTime(Date.UTC(2026, 0, 1, 0, 0, 5, 9)), '2026-01-01T00:00:05.009Z', 'seconds and milliseconds are zero-padded');
  t.equal(isoTime(Date.UTC(2026, 0, 1, 0, 0, 5, 90)), '2026-01-01T00:00:05.090Z');
  t.equal(isoTime(Date.UTC(2026, 0, 1, 0, 0, 5, 900)), '2026-01-01T00:00:05.900Z');
});

t.test('a clock set back, a jump forward and a fraction of a millisecond still give the right text', async (t) => {
  const now = Date.UTC(2026, 11, 7, 12, 34, 56, 789);
  t.equal(isoTime(now), iso(now));
  t.equal(isoTime(now - 1), iso(now - 1), 'one millisecond earlier, in the same minute');
  t.equal(isoTime(now - 60_000), iso(now - 60_000), 'a minute earlier');
  t.equal(isoTime(now - 86_400_000 * 400), iso(now - 86_400_000 * 400), 'a year earlier');
  t.equal(isoTime(now + 86_400_000 * 40), iso(now + 86_400_000 * 40), 'weeks later');
  t.equal(isoTime(now + 0.75), iso(now + 0.75), 'a fractional millisecond is cut, as toISOString cuts it');
  const wrong: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const ms = Math.floor(Math.random() * 4_102_444_800_000);
    if (isoTime(ms) !== iso(ms)) wrong.push(ms);
  }
  t.same(wrong, [], 'random times from 1970 to 2100');
});

t.test('outside years 0–9999 it writes the extended year, as toISOString does, and a bad time still throws', async (t) => {
  const far = Date.UTC(10_000, 0, 1, 0, 0, 1, 0);
  t.equal(isoTime(far), iso(far));
  t.equal(isoTime(far + 1_000), iso(far + 1_000), 'the next second too: no minute was kept for it');
  t.throws(() => isoTime(Number.NaN), RangeError);
});

t.test('with no argument it is the current time', async (t) => {
  const before = Date.now();
  const at = Date.parse(isoTime());
  t.ok(at >= before && at <= Date.now());
});
