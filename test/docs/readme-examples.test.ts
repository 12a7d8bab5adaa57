/*
 * The documented command examples are true: each `$ shadowcode …` line of README.md
 * and the docs/ pages runs, page by page in DOC_ORDER, in one sandbox (a fresh default profile under a fresh
 * HOME, the project ~/src/app), and prints what the README shows under it.
 *
 *   README ─► blocks in order ─► a file block (`# path` YAML, or `<!-- file: path -->`
 *                             │  above it): write that file under HOME
 *                             └─► a `$ ` line: run it in this process (main(), both
 *                                 streams into one transcript, as a terminal shows
 *                                 them) ─► normalize ─► compare with the shown lines
 *
 * What varies per run is normalized on both sides with explicit placeholders
 * (times, pids, durations, job ids, node/sqlite versions, hashes that no README
 * command uses); the sandbox root is cut off, so ~/src/app prints as
 * /home/me/src/app, and this node and checkout print as the README's installed
 * paths. A `…` line stands for any number of lines. An example whose last shown
 * line ends in `[SC_…]` must fail; every other one must exit 0. `engine start`
 * launches the built bin/shadowcode.js, so `npm run build` comes first.
 *
 * Ids an example cannot know in advance are the ones the examples before it printed: a
 * decision id in a command stands for the last one printed, and an example that needs
 * something running first (a connection's pending approval) has it set up in BEFORE, which
 * names the real ids the page's ids stand for.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import t from 'tap';
import { main } from '../../src/cli/main.js';
import { resolveProfile } from '../../src/store/profile.js';
import { getJob } from '../../src/engine/job-events.js';
import { BIN, connection, until } from '../fixtures/env.js';
import { blocks, DOC_FILES_ON_DISK, DOC_ORDER, DOCS, examples, fileOf, parseArgv, shadowcodeArgv, shellWords } from '../fixtures/readme.js';

/** `$ ` examples not run here, by design, each with the reason. Each must still be in a page. */
const SKIPPED: Record<string, string> = {
  'shadowcode --project ~/src/app run --level workspace "make greet() greet the world and run the tests"':
    'runs in test/docs/readme-run.test.ts, against a model served there and a terminal that answers y',
  'shadowcode model probe local': 'contacts the Ollama server on 127.0.0.1:11434, which does not run here',
  'shadowcode engine start --foreground # in this terminal until SIGINT, SIGTERM or SIGHUP, logs on stderr': 'runs until a signal stops it',
};

/**
 * What runs before an example that needs something live, returning the ids the page shows mapped
 * to the real ones, and what ends it after the example named by `until` (or at the end).
 */
type Before = (home: string, env: NodeJS.ProcessEnv) => Promise<{ ids: Record<string, string>; until: string; end: () => Promise<void> }>;
const BEFORE: Record<string, Before> = {
  // An MCP client connection, started with --allow-write, asks for the project's test command; its job waits for approval.
  'shadowcode --project ~/src/app approvals': async (home, env) => {
    const c = await connection({ root: home, profile: resolveProfile(undefined, env, home).dir, project: join(home, 'src', 'app'), env }, { allowWrite: true });
    const r = await c.call('shadow_test', { command: ['npm', 'test'] });
    if (r.isError) throw new Error(r.text);
    const job = r.data.job_id as string;
    return {
      ids: { appr_0mx6a1b2c000a1b2c3d4e5: r.data.approval.id as string },
      until: 'shadowcode --project ~/src/app approvals approve appr_0mx6a1b2c000a1b2c3d4e5',
      // The approved job runs to its end before the next example, so what it records never lands between later ones.
      end: async () => {
        await until(() => ['succeeded', 'failed', 'cancelled'].includes(getJob(c.engine.db(), job)?.state ?? ''), 60000);
        await c.engine.shutdown();
      },
    };
  },
};

/** What the left side of `X | shadowcode …` writes to the command's stdin. */
const STDIN: Record<string, () => string> = {
  'openssl rand -hex 32': () => `${'0123456789abcdef'.repeat(4)}\n`,
  'printenv ANTHROPIC_API_KEY': () => 'sk-ant-example-not-a-real-key\n',
};

const README_NODE = '/usr/bin/node';
const README_ENTRY = '/usr/lib/node_modules/shadowcode/bin/shadowcode.js';
const HEX64 = /\b[0-9a-f]{64}\b/g;

interface Run {
  code: number;
  transcript: string;
}

/** Runs `shadowcode argv` in this process; stdout and stderr go into one transcript in the order written. */
async function shadowcode(argv: string[], env: NodeJS.ProcessEnv, cwd: string, stdin: string): Promise<Run> {
  let transcript = '';
  const sink = () =>
    new Writable({
      write(chunk, _enc, done) {
        transcript += chunk;
        done();
      },
    });
  const code = await main(argv, { stdin: Readable.from([Buffer.from(stdin)]), stdout: sink(), stderr: sink(), env, cwd });
  return { code, transcript };
}

t.test('every docs/ page is in the order the examples run in', async (t) => {
  for (const f of DOC_FILES_ON_DISK) t.ok((DOC_ORDER as readonly string[]).includes(f), `${f} is listed in DOC_ORDER (test/fixtures/readme.ts)`);
});

t.test('the documented command examples print what the pages show', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-readme-')));
  const home = join(root, 'home', 'me');
  mkdirSync(join(home, 'src', 'app'), { recursive: true });
  mkdirSync(join(root, 'tmp'));
  // No SHADOWCODE_HOME: the profile is the default one, ~/.local/share/shadowcode, as the README shows. XDG_DATA_HOME
  // says where that is, because in this process the default would otherwise follow the real user's home.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: join(home, '.local', 'share'), XDG_CACHE_HOME: join(home, '.cache'), TMPDIR: join(root, 'tmp') };
  t.equal(resolveProfile(undefined, env, home).dir, join(home, '.local', 'share', 'shadowcode'), 'the examples use a profile inside the sandbox');
  // The engine example starts a real engine process; stop it even when an example failed midway.
  // What BEFORE started (a connection and its engine) and is still live ends first, while the profile is still there.
  const live = new Map<string, () => Promise<void>>();
  t.teardown(async () => {
    for (const end of live.values()) await end();
    await shadowcode(['engine', 'stop'], env, home, '');
    rmSync(root, { recursive: true, force: true });
  });

  const pages = DOCS.map((page) => ({ path: page.path, blocks: blocks(page.text) }));
  const shown = pages.flatMap((p) => p.blocks.flatMap(examples));
  const pinned = new Set(shown.flatMap((e) => e.command.match(HEX64) ?? []));
  const normalize = (text: string) =>
    text
      .split(realpathSync(BIN)).join(README_ENTRY)
      .split(realpathSync(process.execPath)).join(README_NODE)
      .split(root).join('')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
      .replace(/\bpid \d+/g, 'pid <pid>')
      .replace(/\bafter \d+ ms\b/g, 'after <n> ms')
      .replace(/\b(job|appr|ckpt)_[0-9a-z]{22}\b/g, '$1_<id>')
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<decision>')
      .replace(/\b(stdio|http|cli):\d+:[0-9a-f]{8}\b/g, '$1:<pid>:<hex>')
      .replace(/\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b/g, '<time>')
      // Table columns move with a pid's width: two or more spaces are one column gap.
      .replace(/ {2,}/g, '  ')
      .replace(/\b(node|sqlite) \d+\.\d+\.\d+/g, '$1 <version>')
      .replace(HEX64, (h) => (pinned.has(h) ? h : '<hex64>'))
      .split('\n')
      .map((l) => l.trimEnd());

  for (const key of Object.keys(SKIPPED)) t.ok(shown.some((e) => e.command === key), `skipped example is still in a page: ${key}`);

  let ran = 0;
  // Ids the pages show for things made while the examples run, and the real ones.
  const real: Record<string, string> = {};
  let lastDecision: string | undefined;
  for (const { path, blocks: all } of pages) for (const block of all) {
    const file = fileOf(block);
    if (file) {
      mkdirSync(dirname(join(home, file.path)), { recursive: true });
      writeFileSync(join(home, file.path), file.text);
    }
    for (const ex of examples(block)) {
      const where = `${path}:${ex.line}: $ ${ex.command}`;
      const stages = shellWords(ex.command, home);
      const last = stages.at(-1) as (typeof stages)[number];
      const shownArgv = shadowcodeArgv(last.argv);
      const argv = shownArgv?.map((w) => real[w] ?? (lastDecision && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(w) ? lastDecision : w));
      if (!argv) {
        t.fail(`${where}: not a shadowcode command`);
        continue;
      }
      const expected = normalize(ex.output.join('\n').replace(/\n+$/, ''));
      const wantError = /\[SC_[A-Z_]+\]$/.test(expected.filter((l) => l !== '…').at(-1) ?? '');
      // Skipped or not, a command shown to succeed must be one the CLI accepts.
      if (!wantError) {
        await parseArgv(argv).then(
          () => t.pass(`${where}: parses`),
          (err: Error) => t.fail(`${where}: ${err.message}`),
        );
      }
      if (ex.command in SKIPPED) continue;
      if (stages.length > 2) t.fail(`${where}: at most one pipe`);
      const left = stages.length === 2 ? (stages[0] as (typeof stages)[number]).argv.join(' ') : undefined;
      const feed = left === undefined ? () => '' : STDIN[left];
      if (!feed) {
        t.fail(`${where}: no stdin producer for ${left}`);
        continue;
      }
      const envHere = { ...env, ...Object.fromEntries(last.assignments.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)])) };
      const before = BEFORE[ex.command];
      if (before) {
        const started = await before(home, envHere);
        Object.assign(real, started.ids);
        live.set(started.until, started.end);
      }
      const r = await shadowcode(argv, envHere, home, feed());
      const end = live.get(ex.command);
      if (end) {
        live.delete(ex.command);
        await end();
      }
      lastDecision = /--decision ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/.exec(r.transcript)?.[1] ?? lastDecision;
      ran++;
      const actual = normalize(r.transcript.replace(/\n$/, ''));
      t.ok(wantError ? r.code !== 0 : r.code === 0, `${where}: exit ${r.code}${wantError ? ', an error as shown' : ''}`, { transcript: r.transcript });
      t.ok(matches(expected, r.transcript === '' ? [] : actual), `${where}: output as shown`, { found: actual.join('\n'), wanted: expected.join('\n') });
    }
  }
  t.ok(ran >= 25, `ran ${ran} examples`);
});

/** Line-wise match where a `…` line stands for any number of lines. */
function matches(expected: readonly string[], actual: readonly string[]): boolean {
  const want = expected.length === 1 && expected[0] === '' ? [] : expected;
  const go = (i: number, j: number): boolean => {
    if (i === want.length) return j === actual.length;
    if (want[i] === '…') return go(i + 1, j) || (j < actual.length && go(i, j + 1));
    return j < actual.length && want[i] === actual[j] && go(i + 1, j + 1);
  };
  return go(0, 0);
}
