import t from 'tap';
import { type FrameFault, LineFramer } from '../../src/transport/framing.js';
import { nestsDeeperThan, topLevel } from '../../src/transport/envelope.js';
import { RateWindow, TokenBucket } from '../../src/transport/rate.js';

const LIMITS = { frame_bytes: 64, lifetime_bytes: 1024, frames_per_second: 5, frame_depth: 4 };

function framer() {
  const frames: unknown[] = [];
  const faults: FrameFault[] = [];
  const f = new LineFramer(LIMITS, (m) => frames.push(m), (fault) => faults.push(fault));
  return { f, frames, faults };
}

t.test('splits newline-delimited JSON across chunk boundaries', async (t) => {
  const { f, frames, faults } = framer();
  f.push(Buffer.from('{"a":'));
  f.push(Buffer.from('1}\n{"b":2}\r\n{"c"'));
  f.push(Buffer.from(':3}\n'));
  f.end();
  t.same(frames, [{ a: 1 }, { b: 2 }, { c: 3 }]);
  t.same(faults, []);
});

t.test('a frame over the cap fails while it is still arriving', async (t) => {
  const { f, faults } = framer();
  f.push(Buffer.from(`{"x":"${'y'.repeat(80)}`));
  t.same(faults, ['oversized'], 'no newline needed to notice');
});

t.test('a complete line over the cap fails', async (t) => {
  const { f, faults } = framer();
  f.push(Buffer.from(`{"x":"${'y'.repeat(80)}"}\n`));
  t.same(faults, ['oversized']);
});

t.test('the lifetime cap counts every byte received', async (t) => {
  const faults: FrameFault[] = [];
  const f = new LineFramer({ frame_bytes: 64, lifetime_bytes: 100, frames_per_second: 1000, frame_depth: 4 }, () => {}, (x) => faults.push(x));
  for (let i = 0; i < 3; i++) f.push(Buffer.from(`{"i":${i},"pad":"${'p'.repeat(10)}"}\n`)); // 27 bytes each
  t.same(faults, [], 'under the cap');
  f.push(Buffer.from('{"i":3,"pad":"pppppppppp"}\n'));
  t.same(faults, ['lifetime']);
});

t.test('blank lines count towards the frame rate', async (t) => {
  const { f, faults, frames } = framer();
  f.push(Buffer.from('\n\n\n\n\n\n'));
  t.same(faults, ['flood']);
  t.same(frames, []);
});

t.test('malformed JSON, batches and non-objects are faults', async (t) => {
  for (const [input, fault] of [['{nope}\n', 'malformed'], ['[{"a":1}]\n', 'batch'], ['42\n', 'malformed'], ['"s"\n', 'malformed']] as const) {
    const { f, faults } = framer();
    f.push(Buffer.from(input));
    t.same(faults, [fault], input.trim());
  }
});

t.test('input that ends inside a frame is truncated; trailing blanks are not', async (t) => {
  const a = framer();
  a.f.push(Buffer.from('{"a":1}\n{"b":'));
  a.f.end();
  t.same(a.faults, ['truncated']);
  const b = framer();
  b.f.push(Buffer.from('{"a":1}\n  '));
  b.f.end();
  t.same(b.faults, []);
});

t.test('after a fault nothing more is delivered', async (t) => {
  const { f, frames, faults } = framer();
  f.push(Buffer.from('{bad\n{"a":1}\n'));
  t.same(frames, []);
  t.same(faults, ['malformed']);
});

t.test('the rate window forgets events older than one second', async (t) => {
  let now = 0;
  const w = new RateWindow(2, () => now);
  t.ok(w.hit());
  t.ok(w.hit());
  t.notOk(w.hit());
  now = 1500;
  t.ok(w.hit());
});

t.test('the frame rate is a token bucket: a backlog after a pause passes, a flood does not', async (t) => {
  let now = 0;
  const b = new TokenBucket(128, 128, () => now);
  let before = 0;
  for (let i = 0; i < 40; i++) {
    now += 25;
    before += b.take() ? 1 : 0;
  }
  t.equal(before, 40, 'paced frames pass');
  now += 3000; // the server was stopped for 3 s while the client kept pacing 40 frames/s
  let backlog = 0;
  for (let i = 0; i < 120; i++) backlog += b.take() ? 1 : 0;
  t.equal(backlog, 120, 'the 120 frames that queued up arrive together and pass');
  let paced = 0;
  for (let i = 0; i < 40; i++) {
    now += 25;
    paced += b.take() ? 1 : 0;
  }
  t.equal(paced, 40, 'and pacing on afterwards is not cut');
  const flood = new TokenBucket(128, 128, () => now);
  let passed = 0;
  for (let i = 0; i < 300; i++) passed += flood.take() ? 1 : 0;
  t.equal(passed, 128, 'a burst beyond one window is cut at the burst size');
});

t.test('a frame nested deeper than the limit is reported with its id, not parsed, and is not fatal', async (t) => {
  const deep: Array<[unknown, string]> = [];
  const frames: unknown[] = [];
  const faults: FrameFault[] = [];
  const f = new LineFramer({ ...LIMITS, frame_bytes: 1 << 20 }, (m) => frames.push(m), (x) => faults.push(x), (top, why) => deep.push([top, why]));
  f.push(Buffer.from(`{"jsonrpc":"2.0","method":"ping","params":{"a":${'['.repeat(5)}${']'.repeat(5)}},"id":"d"}\n`));
  f.push(Buffer.from('{"id":7,"x":[[["deep enough"]]]}\n'));
  t.same(deep, [[{ hasId: true, id: 'd', hasMethod: true }, 'the message nests deeper than 4 levels']]);
  t.same(frames, [{ id: 7, x: [[['deep enough']]] }], 'exactly at the limit is parsed');
  t.same(faults, []);
});

t.test('the depth scan skips strings and finds only the top-level id', async (t) => {
  t.equal(nestsDeeperThan(Buffer.from('{"s":"[[[[[[[[\\"[[[["}'), 2), false, 'brackets inside strings do not count');
  t.equal(nestsDeeperThan(Buffer.from('[[[]]]'), 2), true);
  t.same(topLevel('{"params":{"id":"inner","method":"m"},"id":"outer"}'), { hasId: true, id: 'outer', hasMethod: false });
  t.same(topLevel('{"a":"\\"id\\":1","id":-2.5e3,"method":"m"}'), { hasId: true, id: -2500, hasMethod: true });
  t.same(topLevel('{"method":"x","id":null}'), { hasId: true, id: undefined, hasMethod: true }, 'an unusable id is present but has no value');
  t.same(topLevel(`{"id":"x","p":${'['.repeat(100000)}${']'.repeat(100000)}}`), { hasId: true, id: 'x', hasMethod: false }, 'linear, no recursion, even 100,000 deep');
});
