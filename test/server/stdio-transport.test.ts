// The stdio transport under stdout backpressure: however many answers wait for
// the client to read, there is one drain wait, and every answer is delivered.
import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import t from 'tap';
import { BoundedStdioTransport } from '../../src/server/stdio-transport.js';
import { BIN, sandbox } from '../fixtures/env.js';
import { INIT } from '../fixtures/mcp.js';

const LIMITS = { operation_deadline_ms: 45000, frame_bytes: 1048576, lifetime_bytes: 33554432, frames_per_second: 128, init_deadline_ms: 10000, write_deadline_ms: 60000, frame_depth: 64 };

t.test('sends that find stdout full share one drain wait and all complete', async (t) => {
  const written: string[] = [];
  const held: Array<() => void> = [];
  // A stdout the client is not reading: nothing completes until released.
  const out = new Writable({ highWaterMark: 64, write: (chunk, _e, cb) => (written.push(String(chunk)), held.push(cb)) });
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const transport = new BoundedStdioTransport(new PassThrough(), out, LIMITS, () => undefined);
  await transport.start();
  const sends = Array.from({ length: 40 }, (_, i) => transport.send({ jsonrpc: '2.0', id: i, result: { pad: 'x'.repeat(200) } }));
  t.equal(out.listenerCount('drain'), 1, 'forty waiting sends, one drain listener');
  const released = (async () => {
    while (held.length || written.length < 40) {
      held.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
  })();
  await Promise.all(sends);
  await released;
  t.equal(written.length, 40, 'every answer was written');
  t.equal(out.listenerCount('drain'), 0, 'and the wait is gone');
  await new Promise((r) => setImmediate(r));
  t.same(warnings.map((w) => w.name), [], 'no MaxListenersExceededWarning');
  await transport.close();
});

t.test('the server, its stdout unread for a while, answers everything with no warning on stderr', async (t) => {
  const sb = sandbox();
  const child = spawn(process.execPath, [BIN, '--project', sb.project, 'mcp', 'serve'], { env: sb.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise((r) => child.on('close', r));
  child.stdout.pause();
  const lines = [JSON.stringify(INIT), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })];
  for (let i = 2; i < 62; i++) lines.push(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/list' }));
  child.stdin.write(`${lines.join('\n')}\n`);
  // The answers (about 1 MB) overflow the pipe while nobody reads; then read them all.
  await new Promise((r) => setTimeout(r, 1500));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stdout.resume();
  child.stdin.end();
  await exit;
  const ids = out.split('\n').filter(Boolean).map((l) => JSON.parse(l).id);
  t.equal(ids.length, 61, 'every request answered');
  t.notMatch(err, /MaxListenersExceededWarning|drain listeners/);
  t.equal(err, '', 'nothing on stderr');
});
