// Only fds 0-2 reach a process shadowcode starts. The shell that started shadowcode left
// fd 200 open on a file (`exec 200>>FILE`, as the attack campaign did); the process inside,
// fixtures/fd-report.mjs, lists what it inherited and tries to write to fd 200. Supervised
// (an approved command: also the supervisor's own lifeline on fd 3 must stay out) and
// started directly (a runner's --version probe, a task's background process), sandboxed;
// and unsandboxed, where the descriptor is only emptied. Real CLI processes throughout.
import { spawn } from 'node:child_process';
import { copyFileSync, fstatSync, readFileSync, readlinkSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { GATE_FD, sealed } from '../../../src/engine/spawn/fds.js';
import { sandboxSupport } from '../../../src/engine/spawn/index.js';
import { BIN, cli, ROOT, type Sandbox, sandbox, TS_IMPORT, withCodeCache } from '../../fixtures/env.js';
import { FIXTURES } from '../../fixtures/runner-task.js';

const REPORT = join(FIXTURES, 'fd-report.mjs');
const NOTHING = { inherited: [], fd200: 'EBADF' };

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
});

/** Runs argv under bash with fd 200 open for appending on a file; what it printed, and what landed in the file. */
function withFd200(sb: Sandbox, argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string; landed: string }> {
  const file = join(sb.root, 'fd200.log');
  writeFileSync(file, '');
  return new Promise((resolve) => {
    const child = spawn('/bin/bash', ['-c', 'exec 200>>"$0"; exec "$@"', file, ...argv], { cwd: sb.root, env: withCodeCache({ ...sb.env, ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => resolve({ code, out, err, landed: readFileSync(file, 'utf8') }));
  });
}

async function trusted(t: any): Promise<Sandbox> {
  const sb = sandbox('fds');
  t.equal((await cli(sb, ['--project', sb.project, 'trust'])).code, 0);
  // In the project: an approved command sees the project, not the checkout.
  copyFileSync(REPORT, join(sb.project, 'fd-report.mjs'));
  return sb;
}

t.test('an approved command gets fds 0-2 only: neither what shadowcode inherited nor the supervisor\'s lifeline', async (t) => {
  const sb = await trusted(t);
  const r = await withFd200(sb, [process.execPath, BIN, '--project', sb.project, '--json', 'test', '--yes', '--', 'node', 'fd-report.mjs']);
  t.equal(r.code, 0, r.err);
  t.strictSame(JSON.parse(JSON.parse(r.out).output_tail), NOTHING, r.out);
  t.equal(r.landed, '', 'nothing reached the file');
});

t.test("a runner's --version probe, started without a supervisor, gets fds 0-2 only", async (t) => {
  const sb = sandbox('fds');
  t.equal((await cli(sb, ['model', 'add', 'fdr', '--provider', 'acp', '--command', REPORT])).code, 0);
  const r = await withFd200(sb, [process.execPath, BIN, '--json', 'model', 'probe', 'fdr']);
  t.equal(r.code, 0, r.err);
  t.strictSame(JSON.parse(JSON.parse(r.out).version), NOTHING, r.out);
  t.equal(r.landed, '');
});

t.test("a task's background process, started by an engine that inherited fd 200, gets fds 0-2 only", async (t) => {
  const sb = await trusted(t);
  const r = await withFd200(sb, [process.execPath, ...TS_IMPORT, join(ROOT, 'test', 'fixtures', 'background-fds.ts'), sb.root]);
  t.equal(r.code, 0, r.err);
  t.strictSame(JSON.parse(r.out), NOTHING, r.out);
  t.equal(r.landed, '');
});

t.test('unsandboxed (no bwrap on PATH), an inherited descriptor is /dev/null in the command: what it writes there lands nowhere', async (t) => {
  const sb = await trusted(t);
  const r = await withFd200(sb, [process.execPath, BIN, '--project', sb.project, '--json', 'test', '--yes', '--', process.execPath, 'fd-report.mjs'], { PATH: '/nonexistent-bin' });
  t.equal(r.code, 0, r.err);
  const got = JSON.parse(JSON.parse(r.out).output_tail) as { inherited: number[]; fd200: string };
  t.equal(got.fd200, 'EBADF', 'fd 200 is open, on /dev/null read-only: a write fails');
  t.ok(got.inherited.includes(200), `fd 200 is there, emptied: ${r.out}`);
  t.notOk(got.inherited.includes(3), "the supervisor's lifeline is not");
  t.equal(r.landed, '', 'nothing reached the file');
});

t.test('what is passed on on purpose stays; everything else inherited is /dev/null and, with bwrap, closed by it', async (t) => {
  const r = sealed(['/bin/sh', '-c', 'x', 'procs', '/usr/bin/bwrap', '--unshare-all', '--', 'true'], ['ignore', 'pipe', 'pipe', 'pipe', 'ignore'], 4, [3, 4, 200]);
  t.strictSame(r.argv, ['/bin/sh', '-c', 'x', 'procs', '/usr/bin/bwrap', '--args', '4', '--args', '200', '--unshare-all', '--', 'true'], "bwrap's options, right after bwrap");
  const stdio = r.stdio as unknown[];
  t.equal(stdio.length, 201);
  t.strictSame(stdio.slice(0, 4), ['ignore', 'pipe', 'pipe', 'pipe'], "fd 3 is the caller's own pipe: kept");
  t.equal(typeof stdio[4], 'number', "an 'ignore' above 2 would leave the inherited one in place: /dev/null instead");
  t.equal(stdio[200], stdio[4]);
  t.strictSame(new Set(stdio.slice(5, 200)), new Set(['ignore']), 'every other position: nothing');
  const bare = sealed(['true'], 'inherit', null, [200]);
  t.strictSame(bare.argv, ['true'], 'without bwrap nothing closes it: it stays, on /dev/null');
  t.equal(typeof (bare.stdio as unknown[])[200], 'number');
  const none = sealed(['true'], 'inherit', null, []);
  t.strictSame([none.argv, none.stdio], [['true'], 'inherit'], 'with nothing inherited, nothing changes');
});

t.test('the gate gets a socket below 10, named in the command line in place of its mark, and bwrap an --info-fd; none where 3 to 9 are all inherited', async (t) => {
  const line = ['/usr/bin/bwrap', '--unshare-all', '--', '/bin/sh', '-c', 'gate', 'sh', GATE_FD, 'true'];
  const r = sealed(line, ['ignore', 'pipe', 'pipe'], 0, [3, 200], null, true);
  const stdio = r.stdio as unknown[];
  t.same(r.gate, { socket: 4, info: 201 }, 'the lowest free descriptor above 2 (3 is inherited), and bwrap\'s report above everything');
  t.equal(stdio[4], 'pipe');
  t.equal(stdio[201], 'pipe');
  t.strictSame(r.argv, ['/usr/bin/bwrap', '--args', '3', '--args', '200', '--info-fd', '201', '--unshare-all', '--', '/bin/sh', '-c', 'gate', 'sh', '4', 'true'], 'the shell is told its descriptor');
  const full = sealed(line, ['ignore', 'pipe', 'pipe'], 0, [3, 4, 5, 6, 7, 8, 9], null, true);
  t.equal(full.gate, undefined, 'no descriptor below 10 left: no gate (the spawn point then starts it under the supervisor)');
  t.notOk(full.argv.includes('--info-fd'));
  const bare = sealed(['true'], 'inherit', null, [], null, true);
  t.equal(bare.gate, undefined, 'without bwrap, no gate');
});

t.test("a syscall filter reaches bwrap on a descriptor of its own above everything else, named by --seccomp right after bwrap's other options", async (t) => {
  const r = sealed(['/usr/bin/bwrap', '--unshare-all', '--', 'true'], 'inherit', 0, [3, 7], Buffer.from('program'));
  t.strictSame(r.argv, ['/usr/bin/bwrap', '--args', '3', '--args', '7', '--seccomp', '8', '--unshare-all', '--', 'true']);
  const stdio = r.stdio as unknown[];
  t.equal(stdio.length, 9);
  // Ready before the spawn: a descriptor of a file with no name, holding the program from its start, for this start alone.
  const fd = stdio[8] as number;
  t.equal(typeof fd, 'number', 'the filter: a descriptor, ready when bwrap starts');
  const again = sealed(['/usr/bin/bwrap', '--', 'true'], 'inherit', 0, [], Buffer.from('program'));
  const other = (again.stdio as unknown[])[3] as number;
  t.not(other, fd, 'each start its own');
  const read = (n: number) => {
    const buf = Buffer.alloc(64);
    return buf.subarray(0, readSync(n, buf, 0, buf.length, null)).toString();
  };
  t.equal(read(fd), 'program');
  t.equal(read(other), 'program', 'read from its start, whatever another start read');
  const name = readlinkSync(`/proc/self/fd/${fd}`);
  t.match(name, / \(deleted\)$/, `no name another process could open or swap (${name})`);
  t.throws(() => writeSync(fd, 'x'), { code: 'EBADF' }, 'read-only');
  r.feed();
  again.feed();
  t.throws(() => fstatSync(fd), { code: 'EBADF' }, "feed() closes this process's copy");
  const bare = sealed(['true'], 'inherit', null, [], Buffer.from('program'));
  t.strictSame([bare.argv, bare.stdio], [['true'], 'inherit'], 'without bwrap there is nothing to load it: no descriptor');
});
