/*
 * shadowcode model add ID: configure a model in settings.json. The key is named
 * (an environment variable or a stored secret), never given; the base URL is
 * checked before anything is written, and nothing is contacted (ops/models.ts).
 */
import { isRunnerProvider } from '../../agent/runners/index.js';
import { ScError } from '../../errors.js';
import { addModel, addRunner } from '../../ops/models.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'model add',
  summary: "Configure a model or a coding-CLI runner for tasks (OpenAI-compatible, Anthropic, Ollama; Claude Code, Codex, ACP)",
  description:
    'Add a model to the profile settings. The key is read at task start from the environment variable (--api-key-env) or stored secret (--api-key-secret) you name; it is never accepted on the command line. A base URL must be plain http or https with no credentials, query or fragment, and a key is only sent over https unless the host is loopback. Nothing is contacted; use model probe for that. A coding CLI runner (--provider claude-code, codex or acp) is registered by --command, the absolute path of its executable, and any number of --arg fixed arguments; both are run literally, never through a shell, and the CLI signs in by itself.',
  options: [
    { name: 'provider', type: 'string', value: 'KIND', choices: ['openai-compatible', 'anthropic', 'ollama', 'claude-code', 'codex', 'acp'], description: 'the wire format the endpoint speaks, or the coding CLI to run' },
    { name: 'model', type: 'string', value: 'NAME', description: "the provider's model name" },
    { name: 'base-url', type: 'string', value: 'URL', description: 'the endpoint (defaults: openai-compatible → https://api.openai.com/v1, anthropic → https://api.anthropic.com/, ollama → http://127.0.0.1:11434/v1)' },
    { name: 'api-key-env', type: 'string', value: 'VAR', description: 'the environment variable that holds the key' },
    { name: 'api-key-secret', type: 'string', value: 'NAME', description: 'the stored secret (shadowcode secret set NAME) that holds the key' },
    { name: 'context-tokens', type: 'string', value: 'N', description: "the model's context window in tokens" },
    { name: 'command', type: 'string', value: 'PATH', description: 'for claude-code, codex or acp: the absolute path of the CLI executable' },
    { name: 'arg', type: 'strings', value: 'ARG', description: 'for claude-code, codex or acp: a fixed argument put before the ones shadowcode adds' },
    { name: 'default', type: 'boolean', description: 'make this the default model' },
  ],
  args: [{ name: 'ID', required: true, description: 'a name for this model: letters, digits, _ . - (up to 64)' }],
  examples: [
    'shadowcode model add local --provider ollama --model qwen2.5-coder:14b --default',
    'shadowcode model add claude --provider anthropic --model claude-sonnet-4-5 --api-key-env ANTHROPIC_API_KEY',
    'shadowcode model add vllm --provider openai-compatible --model qwen --base-url http://127.0.0.1:8000/v1 --context-tokens 32768',
    'shadowcode model add cc --provider claude-code --command /usr/local/bin/claude',
    'shadowcode model add gemini --provider acp --command /usr/local/bin/gemini --arg --experimental-acp',
  ],
  workspace: 'ignored',
  async run(ctx, { args, options }) {
    const id = args[0] as string;
    if (!options.provider) throw new ScError('SC_USAGE', 'model add needs --provider openai-compatible|anthropic|ollama|claude-code|codex|acp');
    if (isRunnerProvider(options.provider as string)) return runner(ctx, id, options);
    if (options.command !== undefined || options.arg !== undefined) throw new ScError('SC_USAGE', '--command and --arg are for the coding CLI providers claude-code, codex and acp');
    if (!options.model) throw new ScError('SC_USAGE', 'model add needs --model NAME');
    if (options['api-key-env'] && options['api-key-secret']) throw new ScError('SC_USAGE', 'give --api-key-env or --api-key-secret, not both');
    let contextTokens: number | undefined;
    if (options['context-tokens'] !== undefined) {
      const n = options['context-tokens'] as string;
      if (!/^\d{1,9}$/.test(n)) throw new ScError('SC_BAD_VALUE', `--context-tokens must be a whole number; got "${n.slice(0, 32)}"`, { option: '--context-tokens' });
      contextTokens = Number(n);
    }
    const { url, ...added } = await addModel(ctx.ops, {
      id,
      provider: options.provider as string,
      model: options.model as string,
      ...(options['base-url'] !== undefined ? { base_url: options['base-url'] as string } : {}),
      ...(options['api-key-env'] ? { api_key_env: options['api-key-env'] as string } : {}),
      ...(options['api-key-secret'] ? { api_key_secret: options['api-key-secret'] as string } : {}),
      ...(contextTokens !== undefined ? { context_tokens: contextTokens } : {}),
      default: options.default === true,
    });
    const m = added.model;
    const loopback = added.endpoint === 'loopback';
    const keyName = m.api_key_env ?? m.api_key_secret;
    const lines = [`added model ${id} (${m.provider}, ${m.model}) at ${url} [${added.endpoint}]${added.default ? ', the default' : ''}`];
    // A default endpoint is a public service for openai-compatible and anthropic: say which, so it is not a surprise.
    if (options['base-url'] === undefined && !loopback) lines.push(`no --base-url given: using the ${m.provider} default, ${url}; pass --base-url for another server`);
    if (keyName) lines.push(`key from ${m.api_key_env ? 'environment variable' : 'secret'} ${keyName}${added.credential === 'present' ? '' : ' (not set yet)'}`);
    if (!loopback) lines.push('a remote model is reached only from a project with network permission: shadowcode --project DIR trust --network');
    return { data: added, text: lines.join('\n') };
  },
};

/** The runner branch: a literal executable and fixed arguments, no endpoint or key. */
async function runner(ctx: Parameters<CommandSpec['run']>[0], id: string, options: Record<string, unknown>) {
  const added = await addRunner(ctx.ops, {
    id,
    provider: options.provider as string,
    ...(options.command !== undefined ? { command: options.command as string } : {}),
    args: (options.arg as string[] | undefined) ?? [],
    ...(options.model !== undefined ? { model: options.model as string } : {}),
    ...(options['base-url'] !== undefined ? { base_url: options['base-url'] as string } : {}),
    key_named: options['api-key-env'] !== undefined || options['api-key-secret'] !== undefined || options['context-tokens'] !== undefined,
    default: options.default === true,
  });
  const m = added.model;
  const line = `added ${m.provider} runner ${id}: ${[m.command, ...(m.args ?? [])].map((a) => JSON.stringify(a)).join(' ')}${added.default ? ', the default' : ''}`;
  return { data: added, text: `${line}
it runs only in trusted projects; shadowcode model probe ${id} runs its --version` };
}
