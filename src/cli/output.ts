/*
 * The one renderer: a command's data as JSON with --json, its text otherwise;
 * errors as one line on stderr, or as {"error":{…}} on stdout with --json.
 *
 * Text someone else wrote (a path, an argv word, a server's or a tool's name, a diff, a
 * reason) is rendered inert here, field by field, before it is styled or joined into lines:
 * inert() for one line, inertBlock() for a diff (util/inert-text.ts). The streams it is
 * written to escape whatever a command still let through (terminal.ts).
 */
import type { Writable } from 'node:stream';
import type { ScError } from '../errors.js';
import { scrubText } from '../policy/redact.js';
import type { Output } from './spec.js';
import { inert, inertBlock } from '../util/inert-text.js';
import { style, wantsColour } from './style.js';

export function renderOutput(out: Output, json: boolean, stdout: Writable): void {
  if (json && out.streamed) return;
  const text = json ? `${JSON.stringify(out.data, null, 2)}\n` : out.text.endsWith('\n') || out.text === '' ? out.text : `${out.text}\n`;
  stdout.write(scrubText(text));
}

export function renderError(err: ScError, json: boolean, stdout: Writable, stderr: Writable, env: NodeJS.ProcessEnv = {}): void {
  if (json) stdout.write(`${scrubText(JSON.stringify(err.toJSON(), null, 2))}\n`);
  else {
    const st = style(wantsColour(stderr, env));
    // One line: a path or a name inside the message cannot start a second one.
    stderr.write(`${st.bad('shadowcode:')} ${inert(scrubText(err.message))} ${st.bad(`[${err.code}]`)}\n`);
  }
}

/** The grants beyond the sandbox's defaults a command would run with, as its approval names them (a secret path in capitals). */
export function grantsWords(grants: unknown): string {
  if (!Array.isArray(grants) || grants.length === 0) return '';
  const words = (grants as Array<Record<string, unknown>>).map((g) =>
    typeof g.host === 'string' ? `network ${g.host}${g.private ? ' (private addresses too)' : ''}` : `${String(g.access)} ${String(g.path)}${g.secret ? ' (SECRET)' : ''}${g.scope === 'all_projects' ? ' [all projects]' : ''}`,
  );
  return ` (with sandbox grants: ${inert(words.join(', '))})`;
}

/** One pending action in words, exact: a command's argv and directory, a write's path, an external call's server, tool and arguments. */
export function describeAction(kind: string, action: Record<string, unknown>): string {
  const json = (v: unknown) => inert(JSON.stringify(v));
  if (kind === 'command' && Array.isArray(action.argv)) return `run ${json(action.argv)} in ${inert(String(action.cwd))}${action.unsandboxed ? ' (unsandboxed: it runs with your full access)' : grantsWords(action.grants)}`;
  // A coding CLI's own tool (a Read, a Grep, an ACP tool call) has no argv: name the tool and its exact input.
  if (kind === 'command' && typeof action.tool === 'string') return `use its ${inert(action.tool)} tool with ${json(action.input ?? {})}`;
  if (kind === 'mcp_call') return `call ${inert(String(action.server))} tool ${inert(String(action.tool))} with ${json(action.arguments)}`;
  if (kind === 'write' && typeof action.path === 'string') return `write ${inert(action.path)}${typeof action.rule === 'string' ? ` (protected by rule ${inert(action.rule)}: its own approval)` : ''}`;
  return `${inert(kind)} ${json(action)}`;
}

/**
 * What a person must see before deciding, beyond the one line: for a command, every file the
 * task changed so far and, said plainly, which of them the command runs, with the diff of each;
 * for a write that needs its own approval, the complete diff. Empty when there is nothing more.
 * Each file name is one line and each line of a diff stays one line, whatever they hold.
 */
export function approvalDetails(kind: string, action: Record<string, unknown>): string {
  const out: string[] = [];
  if (kind === 'command' && Array.isArray(action.changed_files)) {
    const files = action.changed_files as string[];
    const more = typeof action.changed_files_more === 'number' ? `, and ${action.changed_files_more} more (shadowcode review lists them all)` : '';
    out.push(files.length ? `  files this task changed so far: ${files.map((f) => inert(String(f))).join(', ')}${more}` : '  this task has changed no files so far');
    if (typeof action.notice === 'string') out.push(`  WARNING: ${inert(action.notice)}`);
    // What the task did to each file the command runs: the diff, so the approval shows the code it would run.
    for (const r of Array.isArray(action.runs_changed) ? (action.runs_changed as Array<{ path?: unknown; diff?: unknown }>) : []) {
      if (typeof r.diff !== 'string' || r.diff === '') continue;
      out.push(`  what this task changed in ${inert(String(r.path))}:`, ...r.diff.replace(/\n$/, '').split('\n').map((l) => `    ${inertBlock(l)}`));
    }
  }
  if (kind === 'write' && typeof action.diff === 'string') {
    if (typeof action.reason === 'string') out.push(`  why this needs its own approval: ${inert(action.reason)}`);
    out.push('  the complete change:', ...action.diff.replace(/\n$/, '').split('\n').map((l) => `    ${inertBlock(l)}`));
  }
  return out.join('\n');
}
