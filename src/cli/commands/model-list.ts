/*
 * shadowcode model list: configured models, their endpoints and whether each key is
 * present (never its value). For a coding CLI runner: its command, whether the
 * executable is found, and what its `--version` says (the only thing it runs).
 */
import { listModels } from '../../ops/models.js';
import type { CommandSpec } from '../spec.js';

/** Columns padded to their widest cell (a runner row has one column fewer; its last cell is not padded). */
function aligned(rows: readonly string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

export const command: CommandSpec = {
  name: 'model list',
  summary: "List configured models and runners, their endpoints and key presence; for a runner, its executable and --version",
  options: [],
  args: [],
  examples: ['shadowcode model list', 'shadowcode --json model list'],
  workspace: 'ignored',
  async run(ctx) {
    const { models, default_model } = await listModels(ctx.ops);
    const rows = models.map((m) => {
      if ('runner' in m) return [`${m.default ? '*' : ' '} ${m.id}`, m.provider, `${m.runner.command}${m.runner.args.length ? ` ${m.runner.args.join(' ')}` : ''}`, m.runner.found ? (m.runner.version ?? `(${m.runner.detail})`) : '(not found)'];
      const key = m.api_key_env ? `env ${m.api_key_env}` : m.api_key_secret ? `secret ${m.api_key_secret}` : 'no key';
      return [`${m.default ? '*' : ' '} ${m.id}`, m.provider, m.model, `${m.base_url ?? ''} [${m.endpoint}]`, `${key}${m.credential === 'missing' ? ' (missing)' : ''}`];
    });
    const text = models.length ? aligned(rows) : 'no models configured; add one with: shadowcode model add ID --provider ollama --model NAME';
    return { data: { models, default_model }, text };
  },
};
