/*
 * The command list, sorted. Each entry loads its module only when it runs or
 * its --help is asked for, so start-up pays for one command, not all of them.
 */
import type { CommandSpec } from '../spec.js';

export interface Entry {
  readonly name: string;
  readonly summary: string;
  readonly load: () => Promise<{ command: CommandSpec }>;
}

export const COMMANDS: readonly Entry[] = [
  { name: 'approvals', summary: 'List pending approvals of any job in the project', load: () => import('./approvals.js') },
  { name: 'approvals approve', summary: 'Approve one pending action', load: () => import('./approvals-approve.js') },
  { name: 'approvals deny', summary: 'Deny one pending action', load: () => import('./approvals-deny.js') },
  { name: 'approvals list', summary: 'List pending approvals (the same as approvals)', load: () => import('./approvals-list.js') },
  { name: 'audit list', summary: 'List the audit log, newest first: decisions (who, what, verdict, rules) and what followed them', load: () => import('./audit-list.js') },
  { name: 'audit show', summary: 'Show one audit row in full: a decision with its request and rules, and what followed it', load: () => import('./audit-show.js') },
  { name: 'audit verify', summary: 'Check the audit log hash chain and report the first break', load: () => import('./audit-verify.js') },
  { name: 'console', summary: 'Serve a local page to watch tasks, decide approvals, review and roll back', load: () => import('./console.js') },
  { name: 'engine start', summary: "Start the profile's shared engine (one per profile)", load: () => import('./engine-start.js') },
  { name: 'engine status', summary: "Show whether the profile's shared engine runs, its owners, jobs and background processes", load: () => import('./engine-status.js') },
  { name: 'engine stop', summary: "Stop the profile's shared engine, cancelling its jobs", load: () => import('./engine-stop.js') },
  { name: 'help', summary: 'Show help for shadowcode, a command group or one command', load: () => import('./help.js') },
  { name: 'jobs', summary: "List the project's jobs (tasks and test runs) of every owner, with state and answer", load: () => import('./jobs.js') },
  { name: 'jobs cancel', summary: 'Cancel a job of the project (a task or a test run), whichever process runs it', load: () => import('./jobs-cancel.js') },
  { name: 'jobs list', summary: "List the project's jobs (the same as jobs)", load: () => import('./jobs-list.js') },
  { name: 'mcp', summary: "Show the external MCP servers delegated tasks may call, and their grants for the project", load: () => import('./mcp.js') },
  { name: 'mcp add', summary: "Store an external MCP server definition for delegated tasks (YAML or JSON)", load: () => import('./mcp-add.js') },
  { name: 'mcp disable', summary: "Withdraw an external server's grant from the project's tasks", load: () => import('./mcp-disable.js') },
  { name: 'mcp enable', summary: "Grant an external server to the trusted project's tasks, pinned by its hash", load: () => import('./mcp-enable.js') },
  { name: 'mcp list', summary: "Show the external MCP servers and their grants (the same as mcp)", load: () => import('./mcp-list.js') },
  { name: 'mcp register', summary: "Print the entry that connects your coding tool (Codex, Claude Code, Cursor, generic) to this project", load: () => import('./mcp-register.js') },
  { name: 'mcp remove', summary: "Remove a stored external server definition and all its grants", load: () => import('./mcp-remove.js') },
  { name: 'mcp serve', summary: "Serve this project to your coding tool (the connected client) over stdio, or --http", load: () => import('./mcp-serve.js') },
  { name: 'mcp tools', summary: "Show an external server's pinned tool catalog (what tasks are offered); review and accept a changed one", load: () => import('./mcp-tools.js') },
  { name: 'model add', summary: "Configure a model or a coding-CLI runner for tasks (OpenAI-compatible, Anthropic, Ollama; Claude Code, Codex, ACP)", load: () => import('./model-add.js') },
  { name: 'model list', summary: "List configured models and runners, their endpoints and key presence; for a runner, its executable and --version", load: () => import('./model-list.js') },
  { name: 'model probe', summary: "Check that a model's endpoint answers and accepts its key, or that a runner's executable runs", load: () => import('./model-probe.js') },
  { name: 'model remove', summary: 'Remove a configured model or runner', load: () => import('./model-remove.js') },
  { name: 'plugin install', summary: "Install a plugin's MCP definitions (inert until enabled)", load: () => import('./plugin-install.js') },
  { name: 'plugin list', summary: 'List installed plugins and their server definitions', load: () => import('./plugin-list.js') },
  { name: 'plugin remove', summary: 'Remove a plugin, its definitions and their grants', load: () => import('./plugin-remove.js') },
  { name: 'policy explain', summary: 'Show which policy rules decide an action', load: () => import('./policy-explain.js') },
  { name: 'review', summary: 'Show what a task changed, as a diff per file', load: () => import('./review.js') },
  { name: 'rollback', summary: 'Undo a task: restore every file it changed (asks y/N, or --yes)', load: () => import('./rollback.js') },
  { name: 'run', summary: 'Start a task for a model or runner and follow it live', load: () => import('./run.js') },
  { name: 'sandbox allow', summary: 'Let sandboxed processes of the project see a folder or file, or reach a host', load: () => import('./sandbox-allow.js') },
  { name: 'sandbox revoke', summary: 'Take back a folder, file or host granted with sandbox allow', load: () => import('./sandbox-revoke.js') },
  { name: 'sandbox show', summary: 'Show what a sandboxed command of the project sees, and its network', load: () => import('./sandbox-show.js') },
  { name: 'secret list', summary: 'List stored secret names and dates (never values)', load: () => import('./secret-list.js') },
  { name: 'secret remove', summary: 'Remove a stored secret', load: () => import('./secret-remove.js') },
  { name: 'secret set', summary: 'Store a secret read from stdin or a hidden prompt', load: () => import('./secret-set.js') },
  { name: 'status', summary: 'Show the project, its trust, the profile, its engine, versions and policy hash', load: () => import('./status.js') },
  { name: 'telemetry off', summary: 'Turn OpenTelemetry export off for this profile, whatever OTEL_* variables say', load: () => import('./telemetry-off.js') },
  { name: 'telemetry set', summary: "Export this profile's spans, audit rows and metrics to an OpenTelemetry collector (OTLP over HTTP)", load: () => import('./telemetry-set.js') },
  { name: 'telemetry show', summary: 'Show the OpenTelemetry export: on or off, where to, and what each process sent or dropped', load: () => import('./telemetry-show.js') },
  { name: 'test', summary: "Run the project's test command as an approved job", load: () => import('./test.js') },
  { name: 'trust', summary: 'Trust the selected project at a trust level', load: () => import('./trust.js') },
  { name: 'untrust', summary: 'Withdraw trust from the selected project', load: () => import('./untrust.js') },
  { name: 'why', summary: "Show a file's recorded changes: which task, when and why", load: () => import('./why.js') },
];

/** Finds the longest command name that prefixes the positional words. */
export function lookup(words: readonly string[]): { entry: Entry; used: number } | undefined {
  for (let n = Math.min(3, words.length); n > 0; n--) {
    const name = words.slice(0, n).join(' ');
    const entry = COMMANDS.find((c) => c.name === name);
    if (entry) return { entry, used: n };
  }
  return undefined;
}

/** Commands below a group word (`secret` → set, list, remove). */
export function group(word: string): Entry[] {
  return COMMANDS.filter((c) => c.name.startsWith(`${word} `));
}
