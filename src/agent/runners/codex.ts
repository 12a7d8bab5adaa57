/*
 * Codex as a task runner (`codex exec --json`, JSONL events on stdout).
 *
 *   codex [fixed args] exec --json --sandbox read-only|workspace-write --skip-git-repo-check
 *         -C <project> [-c mcp_servers.<name>.command=… -c mcp_servers.<name>.args=… | .url=…] -
 *   stdin: the prompt, then end of input
 *   stdout: thread.started, turn.started, item.started|updated|completed {agent_message,
 *           command_execution, file_change, mcp_tool_call, …}, turn.completed {usage}, turn.failed, error
 *
 * Why exec and not app-server: exec's approval policy is fixed at "never", so its own
 * commands and edits are bounded by the sandbox chosen here from the task's ceiling
 * (read-only for Plan, Review and read_only Build), and every change it makes is still
 * caught by the before/after snapshot. Driving app-server would route its approvals to
 * us too, but its JSON-RPC surface changes between releases; that is left for later and
 * stated in docs/coding-clis.md. Codex never gets a granted server's command: its
 * config names our relay (relay-host.ts), so every MCP call waits for the user's exact
 * approval in shadowcode even though exec itself asks nothing.
 */
import { type Driven, type Run, stderrTail } from './run.js';

interface Item {
  id?: string;
  type?: string;
  text?: string;
  command?: string;
  aggregated_output?: string;
  exit_code?: number | null;
  status?: string;
  changes?: Array<{ path?: string; kind?: string }>;
  server?: string;
  tool?: string;
  arguments?: unknown;
  result?: unknown;
  error?: unknown;
  message?: string;
}

interface Event {
  type?: string;
  thread_id?: string;
  item?: Item;
  usage?: { input_tokens?: number; cached_input_tokens?: number; output_tokens?: number };
  error?: { message?: string };
  message?: string;
}

/**
 * `-c key=value` pairs naming our relay under each shared server's name; a JSON string
 * is also a valid TOML string. Codex itself approves the relay's tools ("approve"): the
 * relay waits for the user's exact approval of every call, and exec would otherwise
 * cancel a call that needs one, or (in some releases) run it unasked.
 */
export function codexServerArgs(run: Pick<Run, 'relay' | 'relayCallMs'>): string[] {
  const out: string[] = [];
  for (const r of run.relay) {
    const key = `mcp_servers.${r.name}`;
    const env = `{${Object.entries(r.env).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}}`;
    out.push('-c', `${key}.command=${JSON.stringify(r.command)}`, '-c', `${key}.args=${JSON.stringify(r.args)}`, '-c', `${key}.env=${env}`);
    // A TOML float, as Codex reads this key.
    out.push('-c', `${key}.tool_timeout_sec=${Math.ceil(run.relayCallMs / 1000)}.0`, '-c', `${key}.default_tools_approval_mode="approve"`);
  }
  return out;
}

export async function driveCodex(run: Run): Promise<Driven> {
  const { ctx, readOnly } = run;
  const args = ['exec', '--json', '--sandbox', readOnly ? 'read-only' : 'workspace-write', '--skip-git-repo-check', '-C', ctx.project, ...codexServerArgs(run), '-'];
  const usage = { input_tokens: 0, output_tokens: 0 };
  let turns = 0;
  let lastText: string | null = null;
  let failure: string | null = null;
  const started = new Set<string>();
  const call = (item: Item) => {
    const id = item.id ?? '';
    if (started.has(id)) return;
    started.add(id);
    if (item.type === 'command_execution') run.events.toolCall(id, 'command', { command: item.command ?? '' });
    else if (item.type === 'mcp_tool_call') run.events.toolCall(id, `mcp__${item.server}__${item.tool}`, item.arguments ?? {});
    else if (item.type === 'file_change') run.events.toolCall(id, 'file_change', { changes: item.changes ?? [] });
  };
  const onLine = (line: string) => {
    let e: Event;
    try {
      e = JSON.parse(line) as Event;
    } catch {
      run.emit('runner.output', { text: line });
      return;
    }
    const item = e.item ?? {};
    if (e.type === 'thread.started') run.emit('runner.session', { session_id: e.thread_id ?? null, sandbox: readOnly ? 'read-only' : 'workspace-write' });
    else if (e.type === 'item.started' || e.type === 'item.updated') call(item);
    else if (e.type === 'item.completed') {
      if (item.type === 'agent_message' && typeof item.text === 'string') {
        lastText = item.text;
        run.events.say(item.text, null, []);
      } else if (item.type === 'command_execution') {
        call(item);
        run.events.toolResult(item.id ?? '', item.status !== 'completed' || (item.exit_code ?? 0) !== 0, item.aggregated_output ?? '');
      } else if (item.type === 'mcp_tool_call') {
        call(item);
        run.events.toolResult(item.id ?? '', item.status !== 'completed' || item.error != null, JSON.stringify(item.error ?? item.result ?? null));
      } else if (item.type === 'file_change') {
        call(item);
        run.events.toolResult(item.id ?? '', item.status === 'failed', (item.changes ?? []).map((c) => `${c.kind} ${c.path}`).join('\n'));
      } else if (item.type === 'error') run.emit('runner.warning', { message: item.message ?? '' });
    } else if (e.type === 'turn.completed') {
      turns++;
      usage.input_tokens += e.usage?.input_tokens ?? 0;
      usage.output_tokens += e.usage?.output_tokens ?? 0;
      run.emit('usage', { input_tokens: e.usage?.input_tokens ?? 0, output_tokens: e.usage?.output_tokens ?? 0, cached_input_tokens: e.usage?.cached_input_tokens ?? 0 });
    } else if (e.type === 'turn.failed') failure = `codex turn failed: ${e.error?.message ?? 'no message'}`;
    else if (e.type === 'error') failure ??= `codex error: ${e.message ?? 'no message'}`;
  };
  const proc = run.launch(args, ['HOME', 'CODEX_HOME'], onLine);
  proc.write(ctx.prompt);
  proc.endInput();
  const exit = await proc.done;
  run.emit('runner.exited', { code: exit.code, signal: exit.signal, stopped: exit.stopped });
  const used = turns ? { usage } : {};
  if (exit.overflow) return { ok: false, summary: null, failure: exit.overflow, ...used };
  if (failure) return { ok: false, summary: lastText, failure, ...used };
  if (exit.code !== 0) return { ok: false, summary: lastText, failure: `codex exited ${exit.code ?? exit.signal ?? exit.error}: ${stderrTail(exit.stderr) || 'no stderr'}`, ...used };
  if (!turns) return { ok: false, summary: lastText, failure: 'codex ended without completing a turn' };
  return { ok: true, summary: lastText, steps: turns, ...used };
}
