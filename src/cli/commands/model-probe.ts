/*
 * shadowcode model probe ID: ask the endpoint, once, whether it answers and
 * accepts the key. The only model command that contacts anything, and only
 * because you asked; no prompt is sent.
 */
import { probeModel } from '../../agent/providers/probe.js';
import { isRunnerProvider } from '../../agent/runners/index.js';
import { probeRunner } from '../../agent/runners/probe.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { readSettings } from '../../store/settings.js';
import type { CommandSpec } from '../spec.js';
import { didYouMean } from '../../util/suggest.js';
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
    const models = readSettings(ctx.profile.dir).models ?? [];
    const entry = models.find((m) => m.id === id);
    if (!entry) throw new ScError('SC_MODEL_NOT_FOUND', `no model named ${id.slice(0, 64)}${didYouMean(id, models.map((m) => m.id)) || '; see shadowcode model list'}`);
    if (isRunnerProvider(entry.provider)) {
      const policy = ctx.policy();
      const p = await enforce(ctx.gate(), ctx.request('cli:model.probe', { args: { id } }), (t) => probeRunner(t, entry, policy, ctx.db(), ctx.io.env));
      return { data: { ...p, ok: p.status === 'ok' }, text: `runner ${p.id}: ${p.status === 'ok' ? 'ok' : 'FAILED'} (${inert(p.detail)})${p.version ? `: ${inert(p.version)}` : ''} at ${inert(p.command)}`, exitCode: p.status === 'ok' ? 0 : 1 };
    }
    const secrets = ctx.secrets();
    const r = await enforce(ctx.gate(), ctx.request('cli:model.probe', { args: { id } }), (t) => probeModel(t, entry, { env: ctx.io.env, secrets, limits: ctx.policy().limits.models }));
    return { data: r, text: `model ${r.id}: ${r.ok ? 'ok' : 'FAILED'} (${inert(r.detail)}) at ${inert(r.url)} [${r.endpoint}]`, exitCode: r.ok ? 0 : 1 };
  },
};
