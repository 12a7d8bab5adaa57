/* shadowcode secret set NAME: store a value from stdin or a hidden prompt, never from argv (ops/secrets.ts). */
import { setSecret } from '../../ops/secrets.js';
import { checkSecretName } from '../../store/secrets.js';
import { readSecretValue } from '../read-secret.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'secret set',
  summary: 'Store a secret read from stdin or a hidden prompt',
  description:
    'Store a secret in the profile (secrets.json, mode 0600). The value is read from stdin, or from a hidden prompt at a terminal; it is never taken from the command line and never printed.',
  options: [],
  args: [{ name: 'NAME', required: true, description: 'the name other settings refer to, like an environment variable name' }],
  examples: ['shadowcode secret set SHADOW_MCP_HTTP_TOKEN', 'openssl rand -hex 32 | shadowcode secret set SHADOW_MCP_HTTP_TOKEN'],
  usageHint: 'The value is read from stdin or a hidden prompt, never from the command line.',
  workspace: 'ignored',
  async run(ctx, { args }) {
    const name = args[0] as string;
    checkSecretName(name);
    const value = await readSecretValue(ctx.io, name, ctx.policy().limits.secrets.value_bytes);
    const { created } = await setSecret(ctx.ops, { name, value });
    return { data: { name, created }, text: `${created ? 'stored' : 'replaced'} secret ${name}` };
  },
};
