// The syscall filter every sandbox gets (src/engine/spawn/seccomp.ts, policy/sandbox.json
// `syscalls`), with a real bwrap and real processes; and the system files root could read.
//
//   the kernel keyring ─► whatever started shadowcode holds a key in its session keyring
//     (here: a perl wrapper joins a fresh one, adds "sc-canary", execs the spawn point's
//     own bwrap command line with its filter); inside, request_key + KEYCTL_READ: refused
//   setuid files ─► inside, `chmod 4755` on a copy of sh, a create with mode 04755: refused,
//     and nothing setuid is left in the project; a plain chmod still works
//   root-only files ─► /etc/shadow, /etc/gshadow, the ssh host keys cannot be read inside, by root either
//
// As the user running the suite (root in CI; an ordinary user in .ci/non-root) through an
// approved command, and, run as root, as uid 65534 through the command line the spawn
// point builds for that user.
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { confinedCommand, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { sealed } from '../../../src/engine/spawn/fds.js';
import { compileFilter, syscallFilter } from '../../../src/engine/spawn/seccomp.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { sandbox } from '../../fixtures/env.js';
import { approvedCommand, isRoot, marked, ordinaryUser } from '../../fixtures/sandboxed.js';

const who = isRoot ? 'root' : 'an ordinary user';
const NR = process.arch === 'arm64' ? { keyctl: 219, add_key: 217, request_key: 218, perf_event_open: 241, userfaultfd: 282, bpf: 280, unshare: 97 } : { keyctl: 250, add_key: 248, request_key: 249, perf_event_open: 298, userfaultfd: 323, bpf: 321, unshare: 272 };
const CANARY = `keyring-canary-${process.pid}`;

t.test('bwrap can make a sandbox on this machine, and the filter is built for it (the tests below need both)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
  t.equal(syscallFilter(shippedPolicy().sandbox).kind, 'bpf');
});

/** Joins a fresh session keyring, puts the canary in it, and becomes the rest of its argv. */
// perl's syscall() passes a string as a pointer to its buffer, which must be a variable.
const keyringWrapper = ['perl', '-e', `my ($t, $d, $v) = ("user", "sc-canary", "${CANARY}"); syscall(${NR.keyctl}, 1, 0) >= 0 or die "join: $!"; syscall(${NR.add_key}, $t, $d, $v, length($v), -3) >= 0 or die "add_key: $!"; exec @ARGV or die "exec: $!"`];

/** What a process inside reaches of the keyring: the canary by request_key and KEYCTL_READ, its own session keyring, a key of its own. */
const keyringProbe = [
  'use strict;',
  'my ($t, $d, $m, $x) = ("user", "sc-canary", "mine", "x");',
  `my $id = syscall(${NR.request_key}, $t, $d, 0, 0);`,
  'if ($id < 0) { print "@ request_key: ", ($!{EPERM} ? "EPERM" : "$!"), "\\n" }',
  `else { my $b = "\\0" x 64; my $n = syscall(${NR.keyctl}, 11, $id, $b, 64); print "@ read: ", substr($b, 0, $n), "\\n" }`,
  `my $s = syscall(${NR.keyctl}, 0, -3, 0);`,
  'print "@ session keyring: ", ($s < 0 ? ($!{EPERM} ? "EPERM" : "$!") : "id"), "\\n";',
  `my $k = syscall(${NR.add_key}, $t, $m, $x, 1, -2);`,
  'print "@ add_key: ", ($k < 0 ? ($!{EPERM} ? "EPERM" : "$!") : "added"), "\\n";',
].join('\n');
const KEYRING_REFUSED = ['request_key: EPERM', 'session keyring: EPERM', 'add_key: EPERM'];

/** Starts the spawn point's command line for `script` as the user running the suite, under `wrap`. */
function startAsSelf(t: any, script: string, wrap: readonly string[]): Promise<{ code: number | null; out: string }> {
  const sb = sandbox('seccomp');
  mkdirSync(sb.profile, { recursive: true, mode: 0o700 });
  writeFileSync(join(sb.project, 'probe.pl'), keyringProbe);
  const c = confinedCommand({ argv: ['sh', '-c', script], cwd: sb.project, env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: sb.root }, confine: { project: sb.project, network: false }, trustedArgv: false, policy: shippedPolicy() }, sandboxSupport().bwrap as string, sb.profile);
  const s = sealed([...wrap, ...c.argv], ['ignore', 'pipe', 'pipe'], (c.bwrapAt ?? 0) + wrap.length, [], c.filter);
  const child = spawn(s.argv[0] as string, s.argv.slice(1), { cwd: sb.project, env: c.env, stdio: s.stdio });
  s.feed(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      c.release();
      resolve({ code, out });
    }),
  );
}

t.test('the canary wrapper works: outside any sandbox, a child of it reads the key (the control for the tests below)', async (t) => {
  const sb = sandbox('seccomp');
  writeFileSync(join(sb.project, 'probe.pl'), keyringProbe);
  const child = spawn(keyringWrapper[0] as string, [...keyringWrapper.slice(1), 'perl', join(sb.project, 'probe.pl')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await new Promise((r) => child.on('close', r));
  t.strictSame(marked(out), [`read: ${CANARY}`, 'session keyring: id', 'add_key: added'], out);
});

t.test(`as ${who}, a key in the session keyring of whatever started shadowcode cannot be read from inside the sandbox`, async (t) => {
  const r = await startAsSelf(t, 'perl probe.pl', keyringWrapper);
  t.equal(r.code, 0, r.out);
  t.strictSame(marked(r.out), KEYRING_REFUSED, r.out);
  t.notMatch(r.out, CANARY);
});

t.test(`as ${who}, an approved command cannot use the kernel keyring at all`, async (t) => {
  const { result } = await approvedCommand(t, () => 'perl probe.pl', { setup: (b) => writeFileSync(join(b.sb.project, 'probe.pl'), keyringProbe) });
  t.strictSame(marked(result), KEYRING_REFUSED, result);
});

/** Tries to leave a setuid or setgid file behind; a plain mode still works. */
const setuidScript = [
  'cp /bin/sh rootsh',
  'chmod 4755 rootsh 2>/dev/null && echo "@ chmod 4755 worked" || echo "@ chmod 4755 refused"',
  'chmod g+s rootsh 2>/dev/null && echo "@ chmod g+s worked" || echo "@ chmod g+s refused"',
  'cp /bin/sh plainsh; chmod 700 plainsh && echo "@ chmod 700 worked"',
  `perl -e 'use Fcntl; print sysopen(my $f, "made", O_CREAT|O_WRONLY, 04755) ? "@ create 04755 worked\\n" : "@ create 04755 refused\\n"'`,
  `perl -e 'use Fcntl; print sysopen(my $f, "plain", O_CREAT|O_WRONLY, 0750) ? "@ create 0750 worked\\n" : "@ create 0750 refused\\n"'`,
  'stat -c "@ %n %a" rootsh plainsh plain',
].join('; ');
const SETUID_REFUSED = ['chmod 4755 refused', 'chmod g+s refused', 'chmod 700 worked', 'create 04755 refused', 'create 0750 worked', 'rootsh 755', 'plainsh 700', 'plain 750'];

function nothingSetid(t: any, project: string) {
  t.equal(lstatSync(join(project, 'rootsh')).mode & 0o7777, 0o755, 'the copy outside: no setuid or setgid bit');
  t.notOk(existsSync(join(project, 'made')), 'no file was created with mode 04755');
}

t.test(`as ${who}, an approved command cannot leave a setuid or setgid file in the project`, async (t) => {
  const { result, b } = await approvedCommand(t, () => setuidScript);
  t.strictSame(marked(result), SETUID_REFUSED, result);
  nothingSetid(t, b.sb.project);
});

/** The system files root may read and no one else: covered inside (an unreadable device node, an empty folder), to root as to anyone. */
const rootFilesScript = ['for f in /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*_key; do [ -e "$f" ] || continue; echo "@ $f: $(wc -c < "$f" 2>/dev/null || echo unreadable) bytes"; done', 'ls -A /etc/ssl/private 2>/dev/null | sed "s/^/@ \\/etc\\/ssl\\/private holds /"', 'echo "@ end"'].join('; ');
const rootFiles = () =>
  [
    ...['/etc/shadow', '/etc/gshadow'].filter((f) => existsSync(f)).map((f) => `${f}: unreadable bytes`),
    ...['ecdsa', 'ed25519', 'rsa', 'dsa'].map((k) => `/etc/ssh/ssh_host_${k}_key`).filter((f) => existsSync(f)).sort().map((f) => `${f}: unreadable bytes`),
    'end',
  ];

t.test(`as ${who}, /etc/shadow, /etc/gshadow, the ssh host keys and /etc/ssl/private cannot be read inside`, async (t) => {
  t.ok(existsSync('/etc/shadow'), 'this machine has an /etc/shadow to hide');
  const { result } = await approvedCommand(t, () => rootFilesScript);
  t.strictSame(marked(result).sort(), rootFiles().sort(), result);
});

/** Kernel surface no build needs: a perf counter on itself, a user-mode userfaultfd, a BPF map, a new user namespace (each works outside, as root or not). */
const kernelProbe = [
  'use strict;',
  'sub say { my ($what, $r, $ok) = @_; print "@ $what: ", ($r < 0 ? ($!{EPERM} ? "EPERM" : "$!") : $ok), "\\n" }',
  // struct perf_event_attr: PERF_TYPE_SOFTWARE, cpu clock, exclude_kernel | exclude_hv (allowed at perf_event_paranoid 2).
  'my $attr = pack("L L Q Q Q Q Q", 1, 112, 0, 0, 0, 0, (1<<5)|(1<<6)) . ("\\0" x 64);',
  `say("perf_event_open", syscall(${NR.perf_event_open}, $attr, 0, -1, -1, 0), "opened");`,
  `say("userfaultfd", syscall(${NR.userfaultfd}, 1), "opened");`,
  'my $b = "\\0" x 128;',
  `say("bpf", syscall(${NR.bpf}, 0, $b, 128), "ok");`,
  `say("unshare user", syscall(${NR.unshare}, 0x10000000), "new namespace");`,
].join('\n');
const KERNEL_REFUSED = ['perf_event_open: EPERM', 'userfaultfd: EPERM', 'bpf: EPERM', 'unshare user: EPERM'];

t.test('the kernel probe reaches all of it outside any sandbox (the control for the test below)', async (t) => {
  const sb = sandbox('seccomp');
  writeFileSync(join(sb.project, 'kernel.pl'), kernelProbe);
  const child = spawn('perl', [join(sb.project, 'kernel.pl')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await new Promise((r) => child.on('close', r));
  t.strictSame(marked(out), ['perf_event_open: opened', 'userfaultfd: opened', 'bpf: Invalid argument', 'unshare user: new namespace'], out);
});

t.test(`as ${who}, an approved command gets no perf counters, userfaultfd, BPF or new user namespace`, async (t) => {
  const { result } = await approvedCommand(t, () => 'perl kernel.pl', { setup: (b) => writeFileSync(join(b.sb.project, 'kernel.pl'), kernelProbe) });
  t.strictSame(marked(result), KERNEL_REFUSED, result);
});

if (isRoot) {
  // Root only: starting the sandbox as another user needs root. A suite run as an ordinary user covers these above.
  t.test('as an ordinary user (uid 65534, started by root), the keyring of what started the sandbox is out of reach too', async (t) => {
    const w = ordinaryUser(t);
    w.file(join(w.project, 'probe.pl'), keyringProbe, 0o644);
    const run = w.start('perl probe.pl', { wrap: keyringWrapper });
    t.equal(await run.exit, 0, run.out());
    t.strictSame(marked(run.out()), KEYRING_REFUSED, run.out());
    t.notMatch(run.out(), CANARY);
  });

  t.test('as an ordinary user (uid 65534, started by root), no setuid or setgid file either', async (t) => {
    const w = ordinaryUser(t);
    const run = w.start(setuidScript);
    t.equal(await run.exit, 0, run.out());
    t.strictSame(marked(run.out()), SETUID_REFUSED, run.out());
    nothingSetid(t, w.project);
  });
}

t.test('the program: a known architecture only; x32 and every other one refused', async (t) => {
  const rules = shippedPolicy().sandbox.syscalls;
  for (const abi of ['x86_64', 'aarch64'] as const) {
    const p = compileFilter(rules, abi);
    t.equal(p.length % 8, 0, `${abi}: whole instructions`);
    // First: load seccomp_data.arch; last instruction of the arch check kills.
    t.strictSame([p.readUInt16LE(0), p.readUInt32LE(4)], [0x20, 4], `${abi}: the architecture is checked first`);
  }
  t.ok(compileFilter({ refused: [], refuse_setid_modes: false, refuse_new_user_namespaces: false }, 'x86_64').length < compileFilter(rules, 'x86_64').length, 'the rules make the program');
});

/** Runs a classic-BPF seccomp program on one call, as the kernel would (the few instructions it uses); the action back. */
function run(p: Buffer, data: { arch: number; nr: number; args?: number[] }): number {
  const word = (off: number) => (off === 0 ? data.nr : off === 4 ? data.arch : off >= 16 && (off - 16) % 8 === 0 ? (data.args?.[(off - 16) / 8] ?? 0) : 0) >>> 0;
  let a = 0;
  for (let pc = 0; pc < p.length / 8; pc++) {
    const [code, jt, jf, k] = [p.readUInt16LE(pc * 8), p.readUInt8(pc * 8 + 2), p.readUInt8(pc * 8 + 3), p.readUInt32LE(pc * 8 + 4)];
    if (code === 0x20) a = word(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += a === k ? jt : jf;
    else if (code === 0x35) pc += a >= k ? jt : jf;
    else if (code === 0x45) pc += (a & k) !== 0 ? jt : jf;
    else throw new Error(`unknown instruction ${code}`);
  }
  throw new Error('fell off the end');
}

t.test('the program decides per architecture: x86_64 (and its i386 calls) and aarch64, each by its own numbers; others killed', async (t) => {
  const rules = shippedPolicy().sandbox.syscalls;
  const ALLOW = 0x7fff0000, EPERM = 0x50001, ENOSYS = 0x50026, KILL = 0x80000000;
  const abis = {
    x86_64: { arch: 0xc000003e, prog: 'x86_64', nr: { keyctl: 250, bpf: 321, perf_event_open: 298, userfaultfd: 323, chmod: 90, fchmodat: 268, openat: 257, unshare: 272, clone: 56, clone3: 435, getpid: 39 } },
    i386: { arch: 0x40000003, prog: 'x86_64', nr: { keyctl: 288, bpf: 357, perf_event_open: 336, userfaultfd: 374, chmod: 15, fchmodat: 306, openat: 295, unshare: 310, clone: 120, clone3: 435, getpid: 20 } },
    aarch64: { arch: 0xc00000b7, prog: 'aarch64', nr: { keyctl: 219, bpf: 280, perf_event_open: 241, userfaultfd: 282, chmod: undefined, fchmodat: 53, openat: 56, unshare: 97, clone: 220, clone3: 435, getpid: 172 } },
  } as const;
  for (const [abi, a] of Object.entries(abis)) {
    const p = compileFilter(rules, a.prog as 'x86_64' | 'aarch64');
    const call = (nr: number, args: number[] = []) => run(p, { arch: a.arch, nr, args });
    t.equal(call(a.nr.getpid), ALLOW, `${abi}: getpid allowed`);
    for (const n of ['keyctl', 'bpf', 'perf_event_open', 'userfaultfd'] as const) t.equal(call(a.nr[n]), EPERM, `${abi}: ${n} refused`);
    if (a.nr.chmod !== undefined) t.strictSame([call(a.nr.chmod, [0, 0o4755]), call(a.nr.chmod, [0, 0o755])], [EPERM, ALLOW], `${abi}: chmod 4755 refused, 755 not`);
    t.strictSame([call(a.nr.fchmodat, [0, 0, 0o2775]), call(a.nr.fchmodat, [0, 0, 0o775])], [EPERM, ALLOW], `${abi}: fchmodat g+s refused`);
    t.strictSame([call(a.nr.openat, [0, 0, 0o100, 0o4755]), call(a.nr.openat, [0, 0, 0, 0o4755]), call(a.nr.openat, [0, 0, 0o100, 0o644])], [EPERM, ALLOW, ALLOW], `${abi}: a setuid mode refused only where openat creates`);
    t.strictSame([call(a.nr.unshare, [0x10000000]), call(a.nr.unshare, [0x20000]), call(a.nr.clone, [0x10000000 | 17]), call(a.nr.clone, [0x3d0f00]), call(a.nr.clone3)], [EPERM, ALLOW, EPERM, ALLOW, ENOSYS], `${abi}: no new user namespace; clone3 falls back`);
  }
  t.equal(run(compileFilter(rules, 'x86_64'), { arch: 0xc000003e, nr: 0x40000000 | 39 }), ENOSYS, 'x32 calls: ENOSYS');
  t.equal(run(compileFilter(rules, 'x86_64'), { arch: 0xc00000b7, nr: 39 }), KILL, 'an aarch64 call on the x86_64 program: killed');
  t.equal(run(compileFilter(rules, 'aarch64'), { arch: 0x40000028, nr: 20 }), KILL, '32-bit ARM on aarch64: killed');
});
