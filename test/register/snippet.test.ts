// Property tests: for arbitrary paths, profiles and names, what we print parses
// (with a real TOML parser, or JSON.parse) back to exactly the argv and URL that
// went in, or the command refuses with the documented reason.
import fc from 'fast-check';
import { parse as parseToml } from 'smol-toml';
import t from 'tap';
import { shippedPolicy } from '../../src/policy/load.js';
import { launchCommand } from '../../src/register/launch.js';
import { type ClientName, httpRegistration, stdioRegistration } from '../../src/register/snippet.js';
import { checkGatewayUrl } from '../../src/register/url.js';
import { isValid } from '../../src/schema/validate.js';

const rules = shippedPolicy().clients;
const RUNS = 2500;

// Paths with spaces, quotes, backslashes, control characters, non-ASCII and the odd "${".
const pathChar = fc.oneof(
  fc.constantFrom(' ', '"', "'", '\\', '$', '{', '}', '${', '\t', '\n', '\u0001', '\u007f', 'é', '中', '😀', '=', '#', '[', ']', ','),
  fc.string({ minLength: 1, maxLength: 3, unit: 'grapheme-ascii' }),
);
const segment = fc.array(pathChar, { minLength: 1, maxLength: 6 }).map((a) => a.join('').replace(/\//g, '_'));
const absPath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((segs) => `/${segs.join('/')}`);
const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const client = fc.constantFrom<ClientName>('generic', 'codex', 'claude', 'cursor');
const launchArb = fc.record({
  node: absPath,
  entry: absPath,
  project: absPath,
  profile: fc.option(fc.oneof(absPath, name), { nil: undefined }),
  allowWrite: fc.boolean(),
  allowApprovals: fc.boolean(),
});

function parsed(text: string, format: string, server: string): { command: string; args: string[] } {
  if (format === 'toml') return (parseToml(text) as any).mcp_servers[server];
  return JSON.parse(text).mcpServers[server];
}

t.test('stdio entries round-trip the exact argv, or refuse ${ for clients that expand it', async (t) => {
  fc.assert(
    fc.property(client, name, launchArb, (c, n, l) => {
      const launch = launchCommand(l.node, l.entry, { project: l.project, profile: l.profile, allowWrite: l.allowWrite, allowApprovals: l.allowApprovals && l.allowWrite });
      const values = [launch.command, ...launch.args];
      let reg;
      try {
        reg = stdioRegistration(c, n, launch, rules);
      } catch (e: any) {
        return e.code === 'SC_REGISTER_EXPANSION' && (c === 'claude' || c === 'cursor') && values.some((v) => v.includes('${'));
      }
      if ((c === 'claude' || c === 'cursor') && values.some((v) => v.includes('${'))) return false;
      const back = parsed(reg.text, reg.format, n);
      return isValid('registration', reg) && back.command === launch.command && JSON.stringify(back.args) === JSON.stringify(launch.args);
    }),
    { numRuns: RUNS },
  );
});

t.test('the launch command carries --profile only when given, and the flags only when asked', async (t) => {
  t.same(launchCommand('/n', '/e', { project: '/w', profile: undefined, allowWrite: false, allowApprovals: false }).args, ['/e', '--project', '/w', 'mcp', 'serve']);
  t.same(launchCommand('/n', '/e', { project: '/w', profile: 'work', allowWrite: true, allowApprovals: true }).args, ['/e', '--project', '/w', '--profile', 'work', 'mcp', 'serve', '--allow-write', '--allow-approvals']);
});

const port = fc.integer({ min: 1, max: 65535 });
const host = fc.constantFrom('127.0.0.1', '127.5.6.7', 'localhost', '[::1]', 'LOCALHOST');
const tokenEnv = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,40}$/).filter((s) => !s.startsWith('ANTHROPIC_') && !s.startsWith('CLAUDE_CODE_') && !rules.clients.claude.withheld_env.includes(s));

t.test('HTTP entries round-trip the URL and name only the variable', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom<ClientName>('codex', 'claude', 'cursor'), name, host, port, tokenEnv, (c, n, h, p, env) => {
      const url = checkGatewayUrl(`http://${h}:${p}/mcp`);
      const reg = httpRegistration(c, n, url, env, rules);
      if (!isValid('registration', reg)) return false;
      if (c === 'codex') {
        const e = (parseToml(reg.text) as any).mcp_servers[n];
        return e.url === url && e.bearer_token_env_var === env && Object.keys(e).length === 2;
      }
      const e = JSON.parse(reg.text).mcpServers[n];
      const auth = c === 'claude' ? `Bearer \${${env}}` : `Bearer \${env:${env}}`;
      return e.url === url && e.headers.Authorization === auth && (c === 'claude' ? e.type === 'http' : e.type === undefined);
    }),
    { numRuns: RUNS },
  );
});

t.test('generic HTTP output is refused', async (t) => {
  t.throws(() => httpRegistration('generic', 'x', 'http://127.0.0.1:1/mcp', 'SHADOW_MCP_HTTP_TOKEN', rules), { code: 'SC_REGISTER_UNSUPPORTED' });
});

t.test('names that Claude Code withholds, and invalid names, are refused with advice', async (t) => {
  for (const env of ['ANTHROPIC_API_KEY', 'ANTHROPIC_ANYTHING', 'CLAUDE_CODE_OAUTH_TOKEN', 'OPENAI_API_KEY']) {
    t.throws(() => httpRegistration('claude', 'x', 'http://127.0.0.1:1/mcp', env, rules), { code: 'SC_REGISTER_TOKEN_ENV_INVALID', message: /use a dedicated variable such as SHADOW_MCP_HTTP_TOKEN/ }, env);
  }
  for (const env of ['1BAD', 'has-dash', 'with space', '']) t.throws(() => httpRegistration('codex', 'x', 'http://127.0.0.1:1/mcp', env, rules), { code: 'SC_REGISTER_TOKEN_ENV_INVALID' }, JSON.stringify(env));
  for (const n of ['', 'has space', 'a'.repeat(65), 'dot.name']) t.throws(() => stdioRegistration('codex', n, { command: '/n', args: [] }, rules), { code: 'SC_BAD_VALUE' }, JSON.stringify(n));
});
