// A server whose review or call fails says why in its own words: the tail of its stderr,
// scrubbed of secrets and with its control characters shown escaped, and a hint about the
// sandbox. At the CLI review it is shown to the person; in a task it goes to the user as a
// job event, never into what the model reads.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { activeConnections } from '../../src/client/connection.js';
import { openTaskTools } from '../../src/client/task-tools.js';
import { cli } from '../fixtures/env.js';
import { grant, peerDef, taskCtx, world } from '../fixtures/mcp-client.js';

t.afterEach(() => t.equal(activeConnections(), 0, 'every connection permit is back'));

t.test('a failed review shows the last lines of the server\'s stderr, scrubbed and escaped, with a hint; --json has them as a field', async (t) => {
  const w = await world();
  const canary = `canary-${Math.random().toString(36).slice(2)}-value`;
  // A Python server through a shim it cannot see, as the issue found it: it says so on stderr and exits.
  const script = 'echo "starting" >&2; echo "token is $API_TOKEN" >&2; printf "\\033[2Jpyenv: cannot find $HOME/.pyenv/libexec/pyenv\\n" >&2; exit 127';
  writeFileSync(join(w.sb.root, 'broken.yaml'), `name: broken\ncommand: ["/bin/sh", "-c", ${JSON.stringify(script)}]\nenv:\n  API_TOKEN: ${canary}\n`);
  t.equal((await cli(w.sb, ['mcp', 'add', join(w.sb.root, 'broken.yaml')])).code, 0);
  const hash = JSON.parse((await cli(w.sb, ['--json', 'mcp'])).stdout).definitions.find((d: { id: string }) => d.id === 'config:broken').hash;
  const r = await cli(w.sb, ['--project', w.sb.project, 'mcp', 'enable', 'config:broken', '--hash', hash]);
  t.equal(r.code, 0, 'the grant stays; the review failed');
  t.match(r.stdout, /its tool catalog could not be read \(SC_MCP_CONNECT_FAILED: [^\n]+\)\nthe server's stderr, last 3 lines \(secrets scrubbed\):\n {2}starting\n {2}token is \S+\n {2}\\u001b\[2Jpyenv: cannot find [^\n]+\/\.pyenv\/libexec\/pyenv\nhint: it ran in the sandbox/);
  t.match(r.stdout, /declare it in the definition's sandbox key \(sandbox: \{read, write, network\}\)/);
  t.notMatch(r.stdout, new RegExp(canary), 'the secret it was given is scrubbed');
  t.notMatch(r.stdout, /\u001b\[2J/, 'no raw control character reaches the terminal');
  t.match(r.stdout, /tasks offer none of its tools until/);
  const again = await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp', 'tools', 'config:broken', '--refresh']);
  const err = JSON.parse(again.stdout).error;
  t.equal(err.code, 'SC_MCP_CONNECT_FAILED');
  t.equal(err.detail.stderr_tail.length, 3);
  t.match(err.detail.stderr_tail[2], /^\\u001b\[2Jpyenv: cannot find /);
  t.match(err.detail.hint, /sandbox/);
  t.notMatch(again.stdout, new RegExp(canary));
});

t.test('a failed review whose stderr names a folder the sandbox hid names it and the definition\'s sandbox key that shows it; --json has them as sandbox_blocked', async (t) => {
  const w = await world();
  const data = join(w.sb.root, 'data');
  mkdirSync(data);
  writeFileSync(join(data, 'store.json'), '{}');
  // It exists out here; inside, the home it lies in is an empty private folder. (Named in a
  // script of the project: a folder of an absolute path in a definition's argv would be shown,
  // and its environment's values are scrubbed from what it says.)
  writeFileSync(join(w.sb.project, 'serve.sh'), `exec cat ${join(data, 'store.json')}\n`);
  writeFileSync(join(w.sb.root, 'reader.yaml'), `name: reader\ncommand: ["/bin/sh", ${JSON.stringify(join(w.sb.project, 'serve.sh'))}]\n`);
  t.equal((await cli(w.sb, ['mcp', 'add', join(w.sb.root, 'reader.yaml')])).code, 0);
  const hash = JSON.parse((await cli(w.sb, ['--json', 'mcp'])).stdout).definitions.find((d: { id: string }) => d.id === 'config:reader').hash;
  const r = await cli(w.sb, ['--project', w.sb.project, 'mcp', 'enable', 'config:reader', '--hash', hash]);
  t.equal(r.code, 0, 'the grant stays; the review failed');
  t.match(r.stdout, `hint: it ran in the sandbox, which is why it could not reach what it names:\nsandbox: the sandbox hid ${data}/store.json: your home is an empty private folder inside the sandbox`);
  // Only its definition adds to what a server sees: that is the fix named, never a project grant.
  t.match(r.stdout, `to show ${data} to this server, grant it: declare it in the server's definition: sandbox: {read: ["${data}"]}, then store it and enable the new hash\n`);
  t.notMatch(r.stdout, 'sandbox allow');
  const again = await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp', 'tools', 'config:reader', '--refresh']);
  const err = JSON.parse(again.stdout).error;
  t.match(err.detail.sandbox_blocked, [{ path: `${data}/store.json`, kind: 'hidden', error: 'ENOENT', fix: `declare it in the server's definition: sandbox: {read: ["${data}"]}, then store it and enable the new hash` }]);
});

t.test('a call that kills the server: its stderr goes to the user as a job event, the model gets the failure without it', async (t) => {
  const w = await world();
  await grant(w, 'peer', peerDef('ok'));
  const ctx = taskCtx(w);
  const s = openTaskTools(w.deps, ctx);
  if (!s) throw new Error('no tool source');
  let failure: { code?: string; message?: string } = {};
  try {
    const r = await s.call('mcp__peer__echo', { text: 'crash' }, ctx);
    failure = { code: 'result', message: r.content };
  } catch (err) {
    failure = err as { code: string; message: string };
  }
  await s.close();
  t.equal(failure.code, 'SC_MCP_CALL_FAILED');
  t.notMatch(failure.message ?? '', /store\.json/, 'the server\'s own words are not put in front of the model');
  t.match(failure.message, /the server wrote to its stderr, which the user sees \(job event mcp\.stderr\)/);
  const ev = ctx.events.find((e) => e.kind === 'mcp.stderr');
  t.match(ev?.body, { definition: 'project:.shadowcode/mcp/peer.json', code: 'SC_MCP_CALL_FAILED', lines: ['fatal: cannot open /data/store.json: ENOENT'], hint: /sandbox/ });
});
