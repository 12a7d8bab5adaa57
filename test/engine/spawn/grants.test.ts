// What the user grants the sandbox, with a real bwrap and real processes: a folder granted
// read-write keeps what a command writes there, one granted read-only cannot be written, the
// rest of the home stays invisible; a grant can never make a protected path writable, show the
// profile or a hidden secret path it merely holds, or take the project's writes away; every
// command approval names the grants it would run with. Also as an ordinary user.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Message } from '../../../src/agent/types.js';
import { describeAction } from '../../../src/cli/output.js';
import { pendingApprovals } from '../../../src/engine/jobs.js';
import type { ActivePath } from '../../../src/engine/spawn/grants.js';
import { sandboxSupport } from '../../../src/engine/spawn/index.js';
import { sandboxArgv } from '../../../src/engine/spawn/sandbox.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { readAudit } from '../../../src/store/audit.js';
import { openDb } from '../../../src/store/db.js';
import { agentBench, type Scripted, scripted } from '../../fixtures/agent.js';
import { decideAsCli } from '../../fixtures/decide.js';
import { cli, type Sandbox, SHARED_TMP, sandbox, until } from '../../fixtures/env.js';

const bwrap = () => {
  const b = sandboxSupport().bwrap;
  if (!b) throw new Error(`bwrap is needed here: ${sandboxSupport().detail}`);
  return b;
};
const ws = (sb: Sandbox) => ['--project', sb.project];

/** `shadowcode test --yes -- sh -c script` in the project: what it printed, and its spawn row. */
async function run(sb: Sandbox, script: string) {
  const r = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'sh', '-c', script]);
  const data = JSON.parse(r.stdout);
  const db = openDb(sb.profile, 5000);
  const spawns = readAudit(db, { kinds: ['spawn'], limit: 1000 }).map((x) => x.body as Record<string, unknown>);
  db.close();
  return { out: String(data.output_tail ?? ''), data, spawn: spawns.at(-1) };
}

t.test('a folder granted --write keeps what a command writes; one granted read-only is read but not written; the rest of the home stays invisible', async (t) => {
  const sb = sandbox('scg');
  await cli(sb, [...ws(sb), 'trust']);
  const [rw, ro, other] = ['rw', 'ro', 'other'].map((n) => join(sb.root, n)) as [string, string, string];
  for (const d of [rw, ro, other]) mkdirSync(d);
  writeFileSync(join(ro, 'in.txt'), 'readable\n');
  writeFileSync(join(other, 'x'), 'private\n');
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', rw, '--write'])).code, 0);
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', ro])).code, 0);
  const script = [
    `echo kept > ${rw}/out.txt && echo WROTE-RW`,
    `cat ${ro}/in.txt`,
    `(echo no > ${ro}/new.txt) 2>&1 | grep -q 'Read-only' && echo RO-REFUSED`,
    `ls ${other} >/dev/null 2>&1 && echo SEE-OTHER || echo NO-OTHER`,
  ].join('; ');
  const r = await run(sb, script);
  t.match(r.out, /WROTE-RW/);
  t.equal(readFileSync(join(rw, 'out.txt'), 'utf8'), 'kept\n', 'the file is there after the command');
  t.match(r.out, /^readable$/m);
  t.match(r.out, /RO-REFUSED/);
  t.notOk(existsSync(join(ro, 'new.txt')));
  t.match(r.out, /NO-OTHER/, 'an ungranted folder beside them stays invisible');
  t.match(r.spawn, { kind: 'command', level: 'bwrap', grants: [{ path: rw, write: true, scope: 'project' }, { path: ro, write: false, scope: 'project' }] }, 'the spawn row records the grants');
  await cli(sb, [...ws(sb), 'sandbox', 'revoke', rw]);
  const after = await run(sb, `ls ${rw} >/dev/null 2>&1 && echo SEE-RW || echo NO-RW`);
  t.match(after.out, /NO-RW/, 'revoked: the next start does not see it');
});

/** A throwaway layout: a home with a profile, a project with .git, a shared folder; world-readable for the non-root run. */
function layout() {
  // In the shared temp folder (this file's own is 0700): the ordinary user below must reach it.
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-grants-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  chmodSync(root, 0o755);
  const home = join(root, 'home');
  const project = join(root, 'work', 'app');
  const profile = join(home, '.local', 'share', 'shadowcode');
  for (const d of [join(project, '.git'), profile, join(home, '.config', 'gh'), join(home, '.config', 'app'), join(home, 'dotfiles', 'kube'), join(home, 'data')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(project, '.git', 'config'), '[core]\n');
  writeFileSync(join(profile, 'secrets.json'), '{"K":"profile-secret"}');
  writeFileSync(join(home, '.config', 'gh', 'hosts.yml'), 'oauth_token: gh-secret\n');
  writeFileSync(join(home, '.config', 'app', 'settings'), 'app-settings\n');
  writeFileSync(join(home, '.config', 'token.txt'), 'file-secret\n');
  writeFileSync(join(home, 'dotfiles', 'kube', 'config'), 'kube-secret\n');
  symlinkSync(join(home, 'dotfiles', 'kube'), join(home, '.kube'));
  return { root, home, project, profile };
}

const policyWith = (hidden: string[]) => ({ ...shippedPolicy().sandbox, hidden });
const plan = (l: ReturnType<typeof layout>, grants: ActivePath[], script: string, hidden = ['~/.config/gh', '~/.config/token.txt', '~/.kube']) =>
  sandboxArgv({
    argv: ['/bin/sh', '-c', script], cwd: l.project, env: { HOME: l.home, PATH: '/usr/bin:/bin' }, bwrap: bwrap(), trusted: false, unset: [], stateLimits: shippedPolicy().limits.runners,
    project: l.project, network: false, profileDir: l.profile, policy: policyWith(hidden), grants: { paths: grants, hosts: [], skipped: [] },
  });
const g = (path: string, write = false, secret = false): ActivePath => ({ path, write, secret, scope: 'project' });

function boxed(argv: string[], uid?: number) {
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', ...(uid !== undefined ? { uid, gid: uid } : {}) });
  return `${r.stdout}${r.stderr}`;
}

const hostile = (l: ReturnType<typeof layout>) => [
  `(echo evil >> ${l.project}/.git/config) 2>/dev/null && echo WROTE-GIT || echo NO-GIT`,
  `cat ${l.profile}/secrets.json 2>/dev/null || echo NO-PROFILE`,
  `echo fine > ${l.project}/made.txt && echo WROTE-PROJECT`,
].join('; ');

function checkHostile(t: any, l: ReturnType<typeof layout>, out: string) {
  t.match(out, /NO-GIT/, 'a protected path stays read-only under a write grant that holds it');
  t.equal(readFileSync(join(l.project, '.git', 'config'), 'utf8'), '[core]\n');
  t.match(out, /NO-PROFILE/, 'the profile stays hidden under a grant above it');
  t.notMatch(out, /profile-secret/);
  t.match(out, /WROTE-PROJECT/, 'a read-only grant above the project does not take its writes away');
}

t.test("no grant, however it got into the profile, makes a protected path writable, shows the profile, or takes the project's writes away", async (t) => {
  const l = layout();
  // Grants that sandbox allow refuses, as a hand-edited file or a later policy could bring them: the mount order still holds.
  const out = boxed(plan(l, [g(join(l.project, '.git'), true), g(join(l.root, 'work'), false), g(l.home, true)], hostile(l)));
  checkHostile(t, l, out);
});

t.test('a hidden secret path inside a granted folder is covered, where it really lies; a grant that names it with --secret shows it', async (t) => {
  const l = layout();
  const script = [
    `cat ${l.home}/.config/app/settings`,
    `cat ${l.home}/.config/gh/hosts.yml 2>/dev/null; ls -A ${l.home}/.config/gh | wc -l | sed 's/^/GH-ENTRIES /'`,
    `cat ${l.home}/.config/token.txt 2>/dev/null; echo TOKEN-READ-DONE`,
    `cat ${l.home}/dotfiles/kube/config 2>/dev/null; echo KUBE-READ-DONE`,
    `(echo x > ${l.home}/.config/gh/new) 2>/dev/null && echo WROTE-GH || echo NO-WRITE-GH`,
  ].join('; ');
  const out = boxed(plan(l, [g(join(l.home, '.config')), g(join(l.home, 'dotfiles'), true)], script));
  t.match(out, /^app-settings$/m, 'the rest of the granted folder is readable');
  t.notMatch(out, /gh-secret/, 'a hidden folder inside it is not');
  t.match(out, /GH-ENTRIES 0/, 'it is an empty folder');
  t.notMatch(out, /file-secret/, 'a hidden file inside it is empty');
  t.notMatch(out, /kube-secret/, 'a hidden link is covered where it points, inside another grant');
  t.match(out, /NO-WRITE-GH/, 'the cover is read-only, also under a write grant');
  const named = boxed(plan(l, [g(join(l.home, '.config')), g(join(l.home, '.config', 'gh'), false, true)], `cat ${l.home}/.config/gh/hosts.yml`));
  t.match(named, /gh-secret/, 'a secret grant lands on top of the cover');
});

t.test('as an ordinary user too: grants bind, the protections hold', async (t) => {
  const l = layout();
  // As root, the sandbox is started as nobody; run as an ordinary user (.ci/non-root), as that user.
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? 65534 : (process.getuid?.() ?? -1);
  // The user's own files: a project and a data folder it owns, as on a laptop.
  if (asRoot) for (const p of [l.root, join(l.root, 'work'), l.project, join(l.project, '.git'), join(l.project, '.git', 'config'), l.home, join(l.home, 'data'), join(l.home, '.config'), join(l.home, '.config', 'app'), join(l.home, '.config', 'app', 'settings')]) chownSync(p, user, user);
  const script = `${hostile(l)}; echo kept > ${l.home}/data/f && echo WROTE-DATA; cat ${l.home}/.config/app/settings; id -u`;
  const out = boxed(plan(l, [g(join(l.project, '.git'), true), g(join(l.root, 'work')), g(join(l.home, 'data'), true), g(join(l.home, '.config'))], script), asRoot ? user : undefined);
  t.match(out, new RegExp(`^${user}$`, 'm'), 'it ran as that user');
  checkHostile(t, l, out);
  t.match(out, /WROTE-DATA/);
  t.equal(readFileSync(join(l.home, 'data', 'f'), 'utf8'), 'kept\n');
  t.match(out, /^app-settings$/m);
});

t.test('a command approval names the grants it would run with, a secret one as such, in its JSON and its text', async (t) => {
  let model: Scripted | undefined;
  const b = await agentBench(() => model as Scripted);
  t.teardown(() => b.close());
  const data = join(b.sb.root, 'data');
  const ssh = join(b.sb.root, '.ssh');
  mkdirSync(data);
  mkdirSync(ssh);
  await cli(b.sb, [...ws(b.sb), 'sandbox', 'allow', data, '--write']);
  await cli(b.sb, [...ws(b.sb), 'sandbox', 'allow', ssh, '--secret']);
  await cli(b.sb, [...ws(b.sb), 'sandbox', 'allow', '--net', 'api.example.com:443']);
  model = scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['true'] } }] }, { calls: [{ name: 'finish', arguments: { summary: 'ran' } }] }]);
  const job = b.submit('run it');
  const db = b.engine.db();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1, 30000);
  const [a] = pendingApprovals(db, { project: b.sb.project, jobId: job.id });
  const action = a!.action as Record<string, unknown>;
  t.same(action.grants, [
    { path: data, access: 'read-write', scope: 'project' },
    { path: ssh, access: 'read-only', scope: 'project', secret: true },
    { host: 'api.example.com:443', scope: 'project' },
  ]);
  t.match(describeAction('command', action), `(with sandbox grants: read-write ${data}, read-only ${ssh} (SECRET), network api.example.com:443)`);
  decideAsCli({ policy: b.engine.policy, db }, a!.id, 'approved');
  b.engine.jobs().sync();
  await b.settle(job.id, 60000);
  const results = model.requests.at(-1)!.messages.filter((m) => m.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;
  t.match(results[0]!.content, /exit/i, 'the approved command ran');
});
