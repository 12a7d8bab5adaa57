// Trust as an operation, called the way the console and the library call it: with the caller's
// own context, so its decision is audited under the caller's owner, never as the terminal's.
import t from 'tap';
import { OpsSession } from '../../src/ops/context.js';
import { trust, untrust } from '../../src/ops/trust.js';
import { readAudit } from '../../src/store/audit.js';
import { sandbox } from '../fixtures/env.js';

const decisions = (ops: OpsSession) =>
  readAudit(ops.db(), { kinds: ['decision'], limit: 1000 }).map((r) => r.body as { action: string; principal: { owner: string }; allow: boolean });

t.test('a host trusts and untrusts a project; each is a gate decision audited with the host as owner', async (t) => {
  const sb = sandbox('opstrust');
  const ops = new OpsSession({ profileDir: sb.profile, project: sb.project, env: sb.env, owner: 'host:ide' });
  t.teardown(() => ops.close());
  const r = await trust(ops, { network: false });
  t.match(r, { project: { path: sb.project, trusted: true, level: 'workspace', network: false }, network_changed: false, network_kept: false });
  const again = await trust(ops, { level: 'read_only' });
  t.match(again, { project: { level: 'read_only', network: false }, network_kept: true }, 'a second trust without --network keeps the permission from before');
  const off = await untrust(ops);
  t.match(off.project, { trusted: false, level: 'read_only' });
  const rows = decisions(ops).filter((d) => d.action === 'cli:trust' || d.action === 'cli:untrust');
  t.same(rows.map((d) => [d.action, d.principal.owner, d.allow]), [
    ['cli:trust', 'host:ide', true],
    ['cli:trust', 'host:ide', true],
    ['cli:untrust', 'host:ide', true],
  ]);
});

t.test('trust of a folder holding the home is refused, says which folder it holds, and stores nothing', async (t) => {
  const sb = sandbox('opstrust');
  const ops = new OpsSession({ profileDir: sb.profile, project: sb.root, env: sb.env, owner: 'console' });
  t.teardown(() => ops.close());
  await t.rejects(trust(ops), { code: 'SC_PROJECT_HOLDS_HOME', message: new RegExp(`^${sb.root} is your home folder: `) });
  t.equal((ops.db().prepare('SELECT count(*) AS n FROM projects WHERE trusted = 1').get() as { n: number }).n, 0);
  t.match(decisions(ops).find((d) => d.action === 'cli:trust'), { allow: false, principal: { owner: 'console' } }, 'the refusal is a recorded decision of the console');
});

t.test('an operation on a project refuses a caller that selected none', async (t) => {
  const sb = sandbox('opstrust');
  const ops = new OpsSession({ profileDir: sb.profile, project: undefined, env: sb.env, owner: 'cli' });
  t.teardown(() => ops.close());
  await t.rejects(trust(ops), { code: 'SC_WORKSPACE_REQUIRED' });
  await t.rejects(untrust(ops), { code: 'SC_WORKSPACE_REQUIRED' });
});
