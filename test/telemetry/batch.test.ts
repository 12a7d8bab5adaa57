/*
 * The export queue (src/telemetry/batch.ts), with a sender that records when and what it was
 * asked to send: a call's push never encodes or sends on the call's path, a full queue drops
 * and counts, a collector being left alone is not tried until its back-off ends, and the
 * shutdown tries once more within its deadline and counts what is left.
 */
import t from 'tap';
import { BoundedBatch, type SendOutcome } from '../../src/telemetry/batch.js';

const tick = () => new Promise((r) => setTimeout(r, 0));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recorder(answer: (batch: number[]) => SendOutcome | Promise<SendOutcome> = () => ({ ok: true })) {
  const sent: number[][] = [];
  const errors: string[] = [];
  let wait = 0;
  const counts = { exported: 0, dropped: 0, failed: 0 };
  const send = async (items: number[]) => {
    sent.push([...items]);
    return answer(items);
  };
  return { sent, errors, counts, send, setWait: (ms: number) => (wait = ms), backingOff: () => wait };
}

t.test('a push never sends on the caller\'s path, even when it fills a batch: the send starts from a timer', async (t) => {
  const r = recorder();
  const batch = new BoundedBatch<number>(r.send, { queueItems: 100, batchItems: 2, scheduleMs: 60_000, retries: 0 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  for (let i = 0; i < 6; i++) batch.push(i);
  t.same(r.sent, [], 'nothing was sent while the pushes ran');
  await tick();
  await tick();
  t.same(r.sent, [[0, 1], [2, 3], [4, 5]], 'the full batches went out once the caller had returned');
  t.equal(r.counts.exported, 6);
});

t.test('a batch that is not full waits schedule_ms after its first item', async (t) => {
  const r = recorder();
  const batch = new BoundedBatch<number>(r.send, { queueItems: 100, batchItems: 50, scheduleMs: 30, retries: 0 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  batch.push(1);
  batch.push(2);
  await tick();
  t.same(r.sent, [], 'not yet');
  await sleep(80);
  t.same(r.sent, [[1, 2]], 'sent together after the delay');
});

t.test('a full queue drops what arrives and counts it', async (t) => {
  const r = recorder();
  const batch = new BoundedBatch<number>(r.send, { queueItems: 3, batchItems: 10, scheduleMs: 60_000, retries: 0 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  for (let i = 0; i < 5; i++) batch.push(i);
  t.equal(r.counts.dropped, 2);
  t.equal(batch.queued, 3);
  t.equal(await batch.close(Date.now() + 1000), false, 'nothing was stuck at the deadline');
  t.same(r.sent, [[0, 1, 2]], 'the shutdown sent what was queued');
});

t.test('while the collector is being left alone nothing is tried; after the back-off the held batch goes first, at most `retries` more times', async (t) => {
  let down = true;
  // As the collector does (otlp-http.ts): a failure starts a back-off.
  const r = recorder(() => (down ? (r.setWait(60_000), { ok: false, retry: true, error: 'ECONNREFUSED' }) : { ok: true }));
  const batch = new BoundedBatch<number>(r.send, { queueItems: 100, batchItems: 1, scheduleMs: 10, retries: 1 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  batch.push(1);
  await sleep(30);
  t.same(r.sent, [[1]], 'one attempt');
  for (let i = 2; i <= 20; i++) batch.push(i);
  await sleep(50);
  t.same(r.sent, [[1]], 'no attempt while backing off, however many batches are due');
  down = false;
  r.setWait(0);
  batch.push(21);
  await sleep(50);
  // push() does not bring a back-off's timer forward; close() sends what is left.
  await batch.close(Date.now() + 1000);
  t.same(r.sent[1], [1], 'the held batch went first');
  t.equal(r.counts.exported, 21, 'and then everything else');
  t.equal(r.counts.failed, 0);
  t.same(r.errors, ['ECONNREFUSED'], 'the failure was reported');
});

t.test('a batch refused more than `retries` times is counted failed; a status that is not worth retrying fails it at once', async (t) => {
  const r = recorder((items) => (items[0] === 1 ? { ok: false, retry: true, error: 'no answer' } : { ok: false, retry: false, error: 'HTTP 400 Bad Request' }));
  const batch = new BoundedBatch<number>(r.send, { queueItems: 100, batchItems: 1, scheduleMs: 10, retries: 2 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  batch.push(1);
  await sleep(100);
  t.same(r.sent, [[1], [1], [1]], 'three attempts: the first and two more');
  t.equal(r.counts.failed, 1);
  batch.push(2);
  await sleep(50);
  t.same(r.sent.at(-1), [2]);
  t.equal(r.counts.failed, 2, 'the 400 failed at once');
  t.same(r.sent.filter((b) => b[0] === 2).length, 1, 'and was not sent again');
  await batch.close(Date.now() + 100);
});

t.test('at shutdown a collector being left alone is tried once; what is still queued at the deadline is dropped and counted', async (t) => {
  const r = recorder(() => new Promise<SendOutcome>(() => {}));
  r.setWait(60_000);
  const batch = new BoundedBatch<number>(r.send, { queueItems: 100, batchItems: 2, scheduleMs: 10, retries: 2 }, r.counts, (e) => r.errors.push(e), r.backingOff);
  for (let i = 0; i < 5; i++) batch.push(i);
  await sleep(30);
  t.same(r.sent, [], 'nothing tried while backing off');
  const stuck = await batch.close(Date.now() + 50);
  t.ok(stuck, 'the one attempt was still under way at the deadline');
  t.same(r.sent, [[0, 1]], 'one attempt, not one per batch');
  t.equal(r.counts.dropped, 5, 'everything is counted dropped');
  batch.push(9);
  t.equal(r.counts.dropped, 6, 'and nothing more is taken');
});
