// What a stdio server's definition declares it needs (sandbox: {read, write, network}), with
// real peers in a real sandbox: a declared folder keeps what the server writes after a task's
// approved call (without it nothing reaches the disk); the key is shown by mcp add, mcp and the
// enable review, is part of the hash, and can never name the profile or a hidden secret path;
// named hosts go through the proxy, the whole network only where the project has it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { activeConnections } from '../../src/client/connection.js';
import { openTaskTools } from '../../src/client/task-tools.js';
import { readAudit } from '../../src/store/audit.js';
import { cli } from '../fixtures/env.js';
import { type ClientWorld, grant, peerDef, taskCtx, world } from '../fixtures/mcp-client.js';

t.afterEach(() => t.equal(activeConnections(), 0, 'every connection permit is back'));

const source = (w: ClientWorld, ctx: ReturnType<typeof taskCtx>) => {
  const s = openTaskTools(w.deps, ctx);
  if (!s) throw new Error('no tool source for a build task');
  return s;
};
const spawns = (w: ClientWorld) => readAudit(w.db, { kinds: ['spawn'], limit: 1000 }).map((r) => r.body as Record<string, unknown>);

t.test('a server whose definition declares sandbox.write keeps its file after an approved call; without it nothing reaches the disk', async (t) => {
  const w = await world();
  const store = join(w.sb.root, 'memdata');
  mkdirSync(store);
  const file = join(store, 'memory.jsonl');
  await grant(w, 'mem', peerDef('write-file', { sandbox: { write: ['~/memdata'] } }, [file]));
  const ctx = taskCtx(w);
  const s = source(w, ctx);
  const r = await s.call('mcp__mem__echo', { text: 'remember this' }, ctx);
  t.equal(r.is_error, false, r.content);
  await s.close();
  t.equal(readFileSync(file, 'utf8'), 'remember this\n', 'the file is there after the call, outside the sandbox');
  t.match(spawns(w).filter((x) => x.kind === 'mcp_server').at(-1), { level: 'bwrap', grants: [{ path: store, write: true, scope: 'definition' }] });

  const bare = await world();
  const lost = join(bare.sb.root, 'memdata');
  mkdirSync(lost);
  await grant(bare, 'mem', peerDef('write-file', {}, [join(lost, 'memory.jsonl')]));
  const ctx2 = taskCtx(bare);
  const s2 = source(bare, ctx2);
  const r2 = await s2.call('mcp__mem__echo', { text: 'remember this' }, ctx2);
  await s2.close();
  t.equal(r2.is_error, true, 'the server says it could not write');
  t.match(r2.content, /cannot write .*memory\.jsonl: (ENOENT|EROFS|EACCES)/);
  t.notOk(existsSync(join(lost, 'memory.jsonl')), 'and nothing reached the disk');
});

t.test('mcp add, mcp and the enable review show what a server gets beyond the defaults; a change to it makes the grant stale', async (t) => {
  const w = await world();
  const def = (write: string) => `name: mem\ncommand: ["${process.execPath}", "/opt/mem/index.js"]\nsandbox:\n  read: ["~/models"]\n  write: ["${write}"]\n  network: [api.example.com]\n`;
  const file = join(w.sb.root, 'mem.yaml');
  writeFileSync(file, def('~/memdata'));
  const added = await cli(w.sb, ['mcp', 'add', file]);
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /its sandbox: reads ~\/models; writes ~\/memdata; the network only to api\.example\.com \(through the proxy\)/);
  const view = JSON.parse((await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp'])).stdout);
  const d = view.definitions.find((x: { id: string }) => x.id === 'config:mem');
  t.same(d.sandbox, { read: ['~/models'], write: ['~/memdata'], network: ['api.example.com'] });
  t.equal(d.needs_network, true);
  t.match((await cli(w.sb, ['--project', w.sb.project, 'mcp'])).stdout, /sandbox of config:mem: reads ~\/models; writes ~\/memdata/);
  const en = await cli(w.sb, ['--project', w.sb.project, 'mcp', 'enable', 'config:mem', '--hash', d.hash, '--no-review']);
  t.equal(en.code, 0, en.stderr);
  t.match(en.stdout, /its sandbox: reads ~\/models; writes ~\/memdata; .*\nnot there yet, so not shown to it until you create them: ~\/models, ~\/memdata/);
  writeFileSync(file, def('~/elsewhere'));
  t.equal((await cli(w.sb, ['mcp', 'add', file, '--hash', d.hash])).code, 0);
  const after = JSON.parse((await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp'])).stdout).definitions.find((x: { id: string }) => x.id === 'config:mem');
  t.not(after.hash, d.hash);
  t.equal(after.grant.state, 'stale', 'what was enabled no longer applies');
});

t.test('a definition cannot declare the profile or a hidden secret path: the server does not start', async (t) => {
  const w = await world();
  mkdirSync(join(w.sb.root, '.ssh'));
  const secret = await grant(w, 'peek', peerDef('ok', { sandbox: { read: ['~/.ssh'] } }), { reviewed: false });
  t.match(secret.review, { ok: false, code: 'SC_SANDBOX_GRANT_SECRET' });
  const profile = await grant(w, 'peek2', peerDef('ok', { sandbox: { read: [w.sb.root] } }), { reviewed: false });
  t.match(profile.review, { ok: false, code: 'SC_SANDBOX_GRANT_REFUSED' });
  t.equal(spawns(w).filter((x) => x.kind === 'mcp_server').length, 0, 'neither was started');
});

t.test('named hosts: the server starts behind the proxy, with the proxy variables; the whole network only where the project has it', async (t) => {
  const w = await world();
  await grant(w, 'hosts', peerDef('ok', { sandbox: { network: ['api.example.com:443'] } }));
  const ctx = taskCtx(w);
  const s = source(w, ctx);
  const r = await s.call('mcp__hosts__env', { name: 'HTTPS_PROXY' }, ctx);
  await s.close();
  t.match(r.content, /^http:\/\/127\.0\.0\.1:\d+$/, 'the standard proxy variable points at the bridge inside');
  t.match(spawns(w).filter((x) => x.kind === 'mcp_server').at(-1), { level: 'bwrap', network: false, hosts: ['api.example.com:443'] });

  const all = await world();
  const refused = await grant(all, 'net', peerDef('ok', { sandbox: { network: true } }), { reviewed: false });
  t.match(refused.review, { ok: false, code: 'SC_POLICY_DENIED' }, 'the whole network needs the project\'s network permission');
  await cli(all.sb, ['--project', all.sb.project, 'trust', '--network']);
  const ok = await cli(all.sb, ['--json', '--project', all.sb.project, 'mcp', 'tools', 'project:.shadowcode/mcp/net.json', '--refresh']);
  t.equal(ok.code, 0, ok.stdout);
  t.match(spawns(all).filter((x) => x.kind === 'mcp_server').at(-1), { level: 'bwrap', network: true });
});
