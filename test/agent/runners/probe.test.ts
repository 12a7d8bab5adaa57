// The runner probe behind `model list` and `model probe`: the executable is found or
// not, and only `COMMAND --version` runs, bounded by its deadline.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { probeRunner, runnerFound } from '../../../src/agent/runners/probe.js';
import { enforce } from '../../../src/policy/gate.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { openDb } from '../../../src/store/db.js';
import { ensureProfileDir } from '../../../src/store/profile.js';
import { sandbox } from '../../fixtures/env.js';
import { FIXTURES } from '../../fixtures/runner-task.js';

const policy = shippedPolicy();

async function probe(sb: ReturnType<typeof sandbox>, entry: { id: string; provider: string; command?: string }, limits = policy.limits.runners) {
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 5000);
  try {
    return await enforce({ policy, db: () => db }, { action: 'cli:model.probe', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (tk) => probeRunner(tk, entry, policy.environment, sb.env, limits));
  } finally {
    db.close();
  }
}

t.test('runs only --version and reports its first line', async (t) => {
  const sb = sandbox('probe');
  // A long deadline here: on a loaded machine a node program can take seconds just to start (the deadline has its own test below).
  const relaxed = { ...policy.limits.runners, version_deadline_ms: 120_000 };
  for (const [provider, file, version] of [['claude-code', 'fake-claude.mjs', '2.1.197 (Claude Code)'], ['codex', 'fake-codex.mjs', 'codex-cli 0.171.0'], ['acp', 'fake-acp-agent.mjs', 'fake-agent 0.0.1']] as const) {
    const r = await probe(sb, { id: provider, provider, command: join(FIXTURES, file) }, relaxed);
    t.match(r, { status: 'ok', found: true, version }, provider);
    t.same(JSON.parse(readFileSync(join(sb.env.HOME as string, 'fake-version-argv.json'), 'utf8')), ['--version'], `${provider}: nothing but --version`);
  }
});

t.test('a missing or relative executable is reported not found, and nothing runs', async (t) => {
  const sb = sandbox('probe');
  t.match(await probe(sb, { id: 'x', provider: 'codex', command: join(sb.root, 'missing') }), { status: 'not_found', found: false, version: null });
  t.match(await probe(sb, { id: 'x', provider: 'codex', command: 'codex' }), { status: 'not_found', detail: /absolute path/ });
  t.equal(runnerFound(join(FIXTURES, 'fake-codex.mjs')).found, true);
  const plain = join(sb.root, 'not-executable');
  writeFileSync(plain, '#!/bin/sh\n');
  t.equal(runnerFound(plain).found, false, 'a file without the execute bit is not a runner');
});

t.test('a --version that never ends fails at the deadline and its process group is killed', async (t) => {
  const sb = sandbox('probe');
  const slow = join(sb.root, 'slow-cli');
  writeFileSync(slow, '#!/usr/bin/env node\nsetInterval(() => {}, 1000);\n');
  chmodSync(slow, 0o755);
  const r = await probe(sb, { id: 'slow', provider: 'acp', command: slow }, { ...policy.limits.runners, version_deadline_ms: 300 });
  t.match(r, { status: 'fail', found: true, detail: /did not finish within 300 ms/ });
});
