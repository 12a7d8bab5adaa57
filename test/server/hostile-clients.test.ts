// Issue 11, items 7 and 8: a well-paced client survives a paused server, and
// every request with an id gets an answer: one with an unknown member, a bad
// id, or a value nested 100,000 deep (bounded before parsing, no stack overflow).
import t from 'tap';
import { shippedPolicy } from '../../src/policy/load.js';
import { cli, sandbox, sleep, until } from '../fixtures/env.js';
import { auth, JSON_HEADERS, raw as rawHttp, startGateway } from '../fixtures/http.js';
import { INIT, raw } from '../fixtures/mcp.js';

const L = shippedPolicy().limits;
const DEEP = `${'['.repeat(100000)}${']'.repeat(100000)}`;
const line = (m: unknown) => `${typeof m === 'string' ? m : JSON.stringify(m)}\n`;

function replies(out: string): Map<unknown, any> {
  const m = new Map<unknown, any>();
  for (const l of out.split('\n').filter(Boolean)) {
    const msg = JSON.parse(l);
    m.set(msg.id, msg);
  }
  return m;
}

t.test('over stdio every request with an id is answered, however malformed or deep', async (t) => {
  const sb = sandbox('hostile-rpc');
  const s = raw(sb);
  t.teardown(() => void s.child.kill('SIGKILL'));
  s.child.stdin.write(line(INIT) + line({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  const hostile: Array<[string, string, RegExp]> = [
    ['x', '{"jsonrpc":"2.0","id":"x","method":"ping","extra":1}', /unknown member "extra"/],
    ['v', '{"jsonrpc":"1.0","id":"v","method":"ping"}', /jsonrpc must be "2.0"/],
    ['p', '{"jsonrpc":"2.0","id":"p","method":"ping","params":[]}', /params must be an object/],
    ['d', `{"jsonrpc":"2.0","id":"d","method":"ping","params":{"a":${DEEP}}}`, /nests deeper than 64 levels/],
    ['t', `{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"shadow_status","arguments":{"a":${DEEP}}}}`, /nests deeper than 64 levels/],
  ];
  for (const [, frame] of hostile) s.child.stdin.write(line(frame));
  // Ids the SDK would drop unanswered (its ids are strings or integers): answered here, with the id as read.
  s.child.stdin.write(line('{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"shadow_status","arguments":{}}}'));
  s.child.stdin.write(line('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}'));
  // A deep notification and a deep response are dropped unanswered, as JSON-RPC wants, and logged nowhere.
  s.child.stdin.write(line(`{"jsonrpc":"2.0","method":"notifications/x","params":{"a":${DEEP}}}`));
  s.child.stdin.write(line(`{"jsonrpc":"2.0","id":"r","result":{"a":${DEEP}}}`));
  s.child.stdin.write(line({ jsonrpc: '2.0', id: 'after', method: 'ping' }));
  await until(() => replies(s.stdout()).has('after'), 15000);
  const got = replies(s.stdout());
  for (const [id, , why] of hostile) {
    t.equal(got.get(id)?.error?.code, -32600, `request ${id} is answered with Invalid Request`);
    t.match(got.get(id)?.error?.message, why);
  }
  t.match(got.get(1.5)?.error, { code: -32600, message: /id must be a string or an integer/ }, 'a fractional id is Invalid Request, and no tool runs for it');
  t.match(got.get(9007199254740992)?.error, { code: -32600, message: /id must be a string or an integer/ }, 'so is an integer past what a double holds exactly');
  t.same(got.get('after')?.result, {}, 'and the connection goes on');
  t.notOk(got.has('r'), 'a response is never answered');
  s.child.stdin.end();
  t.equal(await s.exit, 0);
  t.notMatch(s.stderr(), /Maximum call stack|RangeError/, 'no stack overflow anywhere');
});

t.test('over HTTP an extra-key ping and a 100,000-deep request are answered with errors', async (t) => {
  const sb = sandbox('hostile-rpc-http');
  const gw = await startGateway(sb);
  t.teardown(() => void gw.child.kill('SIGKILL'));
  const post = (body: string) => rawHttp(gw.port, { headers: { ...JSON_HEADERS, ...auth(), 'mcp-protocol-version': '2025-06-18' }, body });
  const extra = await post('{"jsonrpc":"2.0","id":"x","method":"ping","extra":1}');
  t.equal(extra.status, 400);
  t.match(JSON.parse(extra.body), { id: 'x', error: { code: -32600 } });
  const deep = await post(`{"jsonrpc":"2.0","id":"d","method":"ping","params":{"a":${DEEP}}}`);
  t.equal(deep.status, 400);
  t.same(JSON.parse(deep.body), { jsonrpc: '2.0', id: 'd', error: { code: -32600, message: 'Invalid Request: the message nests deeper than 64 levels' } });
  const ok = await post('{"jsonrpc":"2.0","id":"y","method":"ping"}');
  t.equal(ok.status, 200);
  t.equal(await gw.stop(), 0);
  t.notMatch(gw.stderr(), /Maximum call stack|RangeError/);
});

t.test('a client pacing 40 frames/s is not cut for flooding after the server was paused for 3 s', async (t) => {
  const sb = sandbox('paused');
  await cli(sb, ['--project', sb.project, 'status']);
  const s = raw(sb);
  t.teardown(() => void s.child.kill('SIGKILL'));
  s.child.stdin.write(line(INIT) + line({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  await until(() => replies(s.stdout()).has(1), 15000);
  let n = 0;
  const ping = () => s.child.stdin.write(line({ jsonrpc: '2.0', id: `p${++n}`, method: 'ping' }));
  const pace = async (count: number) => {
    for (let i = 0; i < count; i++) {
      ping();
      await sleep(25);
    }
  };
  await pace(40); // one second at 40 frames/s
  s.child.kill('SIGSTOP');
  // While it is stopped the client keeps pacing: these 100 frames queue up in the pipe and arrive together.
  const stopped = Date.now();
  await pace(100);
  await sleep(Math.max(0, 3000 - (Date.now() - stopped)));
  s.child.kill('SIGCONT');
  await pace(40); // and paces on afterwards: within one window of the backlog
  await until(() => replies(s.stdout()).has(`p${n}`), 30000);
  t.equal(replies(s.stdout()).size, n + 1, 'every ping was answered');
  t.notMatch(s.stderr(), /flood/, 'the connection was not closed for flooding');
  // A real flood is still cut.
  s.child.stdin.write('\n'.repeat(L.stdio_server.frames_per_second * 3));
  t.equal(await s.exit, 1);
  t.match(s.stderr(), /protocol failure \(flood\)/);
});
