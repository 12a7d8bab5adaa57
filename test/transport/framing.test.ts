import t from 'tap';
import { type FrameFault, LineFramer } from '../../src/transport/framing.js';
import { RateWindow } from '../../src/transport/rate.js';

const LIMITS = { frame_bytes: 64, lifetime_bytes: 1024, frames_per_second: 5 };

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
  const f = new LineFramer({ frame_bytes: 64, lifetime_bytes: 100, frames_per_second: 1000 }, () => {}, (x) => faults.push(x));
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
