/*
 * shadowcode model probe ID: ask the endpoint, once, whether it answers and
 * accepts the key. The only model command that contacts anything, and only
 * because you asked; no prompt is sent.
 */
import { probeModel } from '../../ops/models.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'model probe',
  summary: "Check that a model's endpoint answers and accepts its key, or that a runner's executable runs",
  description: "Send one request for the endpoint's model list, with the configured key, within models.probe_ms. Redirects are refused. Exits 1 when the endpoint does not answer or refuses the key. For a coding CLI runner, run only `COMMAND --version` (within runners.version_deadline_ms) and exit 1 when it is missing or fails.",
  options: [],
  args: [{ name: 'ID', required: true, description: 'the model or runner to probe' }],
  examples: ['shadowcode model probe local', 'shadowcode --json model probe claude', 'shadowcode model probe cc'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const id = args[0] as string;
    const probed = await probeModel(ctx.ops, id);
    if ('runner' in probed) {
      const p = probed.runner;
      return { data: { ...p, ok: p.status === 'ok' }, text: `runner ${p.id}: ${p.status === 'ok' ? 'ok' : 'FAILED'} (${inert(p.detail)})${p.version ? `: ${inert(p.version)}` : ''} at ${inert(p.command)}`, exitCode: p.status === 'ok' ? 0 : 1 };
    }
    const r = probed.endpoint;
    return { data: r, text: `model ${r.id}: ${r.ok ? 'ok' : 'FAILED'} (${inert(r.detail)}) at ${inert(r.url)} [${r.endpoint}]`, exitCode: r.ok ? 0 : 1 };
  },
};
