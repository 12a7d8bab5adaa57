/* shadowcode model list: configured models, their endpoints and whether each key is present (never its value). */
import { listModels } from '../../engine/models.js';
import { readSettings } from '../../store/settings.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'model list',
  summary: 'List configured models, their endpoints and key presence',
  options: [],
  args: [],
  examples: ['shadowcode model list', 'shadowcode --json model list'],
  workspace: 'ignored',
  async run(ctx) {
    const s = readSettings(ctx.profile.dir);
    const models = listModels(s, ctx.io.env, ctx.secrets());
    const text = models.length
      ? models
          .map((m) => {
            const key = m.api_key_env ? `env ${m.api_key_env}` : m.api_key_secret ? `secret ${m.api_key_secret}` : 'no key';
            return `${m.default ? '*' : ' '} ${m.id}  ${m.provider}  ${m.model}  ${m.base_url ?? ''} [${m.endpoint}]  ${key}${m.credential === 'missing' ? ' (missing)' : ''}`;
          })
          .join('\n')
      : 'no models configured; add one with: shadowcode model add ID --provider ollama --model NAME';
    return { data: { models, default_model: s.default_model ?? null }, text };
  },
};
