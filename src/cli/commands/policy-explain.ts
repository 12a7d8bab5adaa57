/*
 * shadowcode policy explain ACTION: which rules decide, for the request the real operation makes.
 *
 *   ACTION             ─► ops/explain: the request as that operation builds it (who asks, the
 *                         project's trust, the level, the record it names) ─► the gate's rules
 *   file:write:PATH    ─► the same for a task's write at --level (default workspace)
 *                         + the protected-path rule that decides PATH (policy/protected-paths.json)
 *   file:read:PATH     ─► the protected-path rule for a task's read of PATH
 *   --decision ID      ─► ops/explain: a recorded decision, its request and rules, the policy hash
 *                         then and now
 *   either             ─► what an approved command may do there (policy/protected-scan.ts)
 */
import { NATIVE_TOOLS } from '../../agent/tools/index.js';
import { ScError } from '../../errors.js';
import { type ActionExplanation, type Asker, type DecisionExplanation, explainAction, explainDecision, netQuery } from '../../ops/explain.js';
import { isKnownAction, knownActions } from '../../policy/actions.js';
import { type PathAccess, pathVerdict } from '../../policy/protected-paths.js';
import { sandboxAccess } from '../../policy/protected-scan.js';
import { trustOf } from '../../policy/requests.js';
import { nearest } from '../../util/suggest.js';
import type { Level } from '../../ticket.js';
import type { Ctx } from '../context.js';
import type { CommandSpec, Input } from '../spec.js';
import { inert } from '../../util/inert-text.js';

const PATH_ACTION = /^file:(write|read):(.+)$/s;

const SANDBOX_WORDS = {
  hidden: 'not visible to approved commands',
  read_only: 'read-only for approved commands',
  created_later: 'not there yet, and not held: an approved command could create it; it is named after the command ends (a protected_created event)',
  writable: 'writable for approved commands',
} as const;

const ruleLines = (rules: ActionExplanation['rules']) => rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`);
const assumedLines = (assumed: readonly string[]) => (assumed.length ? ['assumed:', ...assumed.map((a) => `  ${a}`)] : []);

function principalWords(p: NonNullable<DecisionExplanation['request']>['principal']): string {
  const flags = p.kind === 'cli' ? '' : p.kind === 'engine' ? `, ${p.allow_write ? 'may write' : 'read-only'}` : `, ${p.allow_write ? '--allow-write' : 'no --allow-write'}${p.allow_approvals ? ', --allow-approvals' : ''}`;
  const who = p.kind === 'cli' ? 'you at the command line' : p.kind === 'engine' ? 'the engine, for a task' : `a ${p.kind} connection`;
  return `${who} (owner ${p.owner})${flags}`;
}

function decisionText(d: DecisionExplanation): string {
  const lines = [`${d.allow ? 'ALLOW' : 'DENY'} ${d.action} (ceiling ${d.ceiling}), decision ${d.decision_id} at ${d.at}`, ...ruleLines(d.rules)];
  const r = d.request;
  const b = d.row.body as { principal: NonNullable<DecisionExplanation['request']>['principal']; project: string | null; requested_level?: string; resource?: unknown };
  lines.push('request:', `  who: ${principalWords(b.principal)}`);
  if (b.project === null) lines.push('  project: none');
  else if (r?.project) lines.push(`  project: ${r.project.path}, ${r.project.trusted ? `trusted at ${r.project.level}${r.project.network === undefined ? '' : r.project.network ? ', network on' : ', network off'}` : 'not trusted'}`);
  else lines.push(`  project: ${b.project} (its trust then was not recorded)`);
  if (b.requested_level) lines.push(`  requested level: ${b.requested_level}`);
  if (b.resource) lines.push(`  record: ${JSON.stringify(b.resource)}`);
  if (!d.policy_changed) lines.push(`policy: ${d.policy_hash} (the policy in force now)`);
  else {
    lines.push(`policy: ${d.policy_hash} then; the policy in force now is ${d.current_policy_hash}, so the rules' texts above are today's`);
    if (d.now) lines.push(`decided again now: ${d.now.allow ? 'ALLOW' : 'DENY'} (ceiling ${d.now.ceiling})`, ...ruleLines(d.now.rules));
  }
  return lines.join('\n');
}

async function byDecision(ctx: Ctx, id: string): Promise<{ data: unknown; text: string }> {
  const { action: _a, ...caller } = ctx.request('cli:audit.read');
  const d = await explainDecision(ctx.gate(), caller, id);
  return { data: d, text: decisionText(d) };
}

function asked(ctx: Ctx, action: string, options: Input['options']) {
  const path = ctx.workspace;
  const project = path === undefined ? null : trustOf(ctx.db(), path);
  if (typeof options.host === 'string' && action !== 'net:connect') throw new ScError('SC_USAGE', '--host is for net:connect');
  return {
    action,
    project,
    ...(options.as ? { as: options.as as Asker } : {}),
    allowWrite: options['allow-write'] === true,
    allowApprovals: options['allow-approvals'] === true,
    ...(options.level ? { level: options.level as Level } : {}),
    remote: options.remote === true,
    notOwn: options['not-own'] === true,
    otherProject: options['other-project'] === true,
    cliOwner: ctx.owner,
    homes: ctx.homes(),
    ...(typeof options.host === 'string' ? { net: netQuery(ctx.policy(), ctx.profile.dir, path ?? null, ctx.io.env.HOME, options.host) } : {}),
  };
}

export const command: CommandSpec = {
  name: 'policy explain',
  summary: 'Show which policy rules decide an action, or why a recorded decision was made',
  description:
    "Evaluate one action against the policy without doing it, built the way the operation that makes it builds its request (who asks, the project's trust, the level, the record it names), and print the verdict, the rules that decided and what was assumed. Each request is built by the same code the real operation uses to ask the gate. --as says who asks: a stdio connection (the default for tool:, resource: and prompt: actions), the HTTP gateway (http, the default for http: actions) or you at the command line (cli, the default for cli: actions and engine:connect); the engine asks for what it does for a task (job:run, job:observe, file:write, background:start|stop, runner:spawn, task:tool.…, model:request, mcp:connect, mcp:call, net:connect), at --level (default workspace); mcp:connect --as cli is your review of a server's tools. net:connect --host HOST[:PORT] says whether this project's sandbox grants name that host, found as the proxy finds them. file:write:PATH and file:read:PATH show what decides a task's write or read of that project path, the protected-path rule included, and what an approved command may do with it in the sandbox. --decision ID shows a recorded decision instead: its request, the rules that decided and the policy hash, and says when the policy in force now differs. A refusal's error line names its decision id.",
  options: [
    { name: 'as', type: 'string', value: 'KIND', choices: ['stdio', 'http', 'cli'], description: 'who asks: a stdio connection, the HTTP gateway, or you at the command line (default: cli for cli: actions and engine:connect, http for http: actions, else stdio)' },
    { name: 'allow-write', type: 'boolean', description: 'as if the connection was started with --allow-write' },
    { name: 'allow-approvals', type: 'boolean', description: 'as if the connection was started with --allow-approvals' },
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], description: "the task's level (shadow_run's permission_level); default workspace for a job or the engine's work, read_only for shadow_run" },
    { name: 'remote', type: 'boolean', description: 'the model or external server is not on loopback (model:request, mcp:connect, mcp:call)' },
    { name: 'not-own', type: 'boolean', description: 'the job, task, approval or goal belongs to another owner' },
    { name: 'other-project', type: 'boolean', description: 'the record, or the submitted job, is in another project' },
    { name: 'host', type: 'string', value: 'HOST[:PORT]', description: 'net:connect: the host a sandboxed command asks for (port 443 when not given); whether a sandbox grant names it is read from this profile' },
    { name: 'decision', type: 'string', value: 'ID', description: "explain a recorded decision (the id a refusal's error line names)" },
    { name: 'list', type: 'boolean', description: 'list the actions the policy names, and the families it covers by pattern' },
  ],
  args: [{ name: 'ACTION', required: false, description: 'an action such as tool:shadow_memory.append, engine:submit, cli:trust or file:write:.git/config' }],
  examples: [
    'shadowcode --project ~/src/app policy explain tool:shadow_memory.append --allow-write',
    'shadowcode --project ~/src/app policy explain engine:submit',
    'shadowcode --project ~/src/app policy explain file:write:.git/config',
    'shadowcode --project ~/src/app policy explain net:connect --host api.example.com',
    'shadowcode policy explain --decision 0e803d4c-e30b-4454-b1ad-6e121258c7b9',
    'shadowcode policy explain --list',
  ],
  workspace: 'optional',
  async run(ctx, { args, options }) {
    const known = knownActions(ctx.policy().permissions, [...NATIVE_TOOLS.keys()].map((n) => `task:tool.${n}`));
    if (options.list === true) {
      if (args[0] !== undefined || options.decision !== undefined) throw new ScError('SC_USAGE', 'policy explain --list takes no ACTION and no --decision');
      return { data: known, text: [...known.names, ...known.patterns.map((p) => `${p}  (any action of this family)`)].join('\n') };
    }
    if (typeof options.decision === 'string') {
      if (args[0] !== undefined) throw new ScError('SC_USAGE', 'policy explain takes ACTION or --decision ID, not both');
      return byDecision(ctx, options.decision);
    }
    if (args[0] === undefined) throw new ScError('SC_USAGE', 'policy explain needs ACTION, --decision ID, or --list to see the actions; see shadowcode policy explain --help');
    const given = args[0] as string;
    const file = PATH_ACTION.exec(given);
    if (file) {
      const root = ctx.requireWorkspace('policy explain file:…');
      const access = file[1] as PathAccess;
      const target = file[2] as string;
      const v = pathVerdict(ctx.policy(), root, target, access, ctx.profile.dir);
      const pathRule = v.rule ? { list: v.list, id: v.rule, effect: v.effect, description: v.description, matched: v.matched, ...(v.via ? { via: v.via } : {}) } : null;
      const sandbox = sandboxAccess(ctx.policy(), root, v.matched, v);
      // A task's write is the engine acting for it at the task's level: the gate decides that part.
      const gate = access === 'write' ? explainAction(ctx.policy(), asked(ctx, 'file:write', options)) : null;
      const allow = v.effect !== 'refuse' && (gate ? gate.allow : true);
      const verdict = !allow ? 'DENY' : v.effect === 'approve' ? 'ASK' : 'ALLOW';
      const data = { action: `file:${access}`, path: target, allow, needs_approval: allow && v.effect === 'approve', path_rule: pathRule, sandbox, ...(gate ? { ceiling: gate.ceiling, rules: gate.rules, request: gate.request, assumed: gate.assumed } : {}), policy_hash: ctx.policy().hash };
      const lines = [`${verdict} file:${access} ${inert(target)}${gate ? ` (ceiling ${gate.ceiling})` : ''}`];
      if (gate) lines.push(...ruleLines(gate.rules));
      lines.push(pathRule ? `  ${v.effect === 'refuse' ? 'refuse' : 'own approval with the diff'} ${pathRule.list} ${pathRule.id}: ${pathRule.description} (matched ${inert(pathRule.matched)}${v.via ? `: ${inert(v.via)}` : ''})` : '  no protected-path rule applies');
      lines.push(`  sandbox: ${SANDBOX_WORDS[sandbox]}`);
      if (gate) lines.push(...assumedLines(gate.assumed));
      return { data, text: lines.join('\n') };
    }
    const d = explainAction(ctx.policy(), asked(ctx, given, options));
    const isKnown = isKnownAction(known, given);
    const suggestion = isKnown ? undefined : nearest(given, known.names);
    const data = { action: given, known: isKnown, ...(suggestion ? { suggestion } : {}), allow: d.allow, ceiling: d.ceiling, rules: d.rules, request: d.request, assumed: d.assumed, policy_hash: d.policy_hash };
    const unknownLine = isKnown ? [] : [`  ${inert(given)} is not an action this policy knows${suggestion ? `; did you mean ${suggestion}?` : ''} (shadowcode policy explain --list shows them)`];
    const text = [`${d.allow ? 'ALLOW' : 'DENY'} ${inert(given)} (ceiling ${d.ceiling})`, ...unknownLine, ...ruleLines(d.rules), ...assumedLines(d.assumed)].join('\n');
    return { data, text };
  },
};
