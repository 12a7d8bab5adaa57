/*
 * The README's and --help's command examples, read as a shell would read them.
 *
 *   README.md ─► fenced blocks ─► `$ command` lines + the output shown under them (sessions)
 *                             └─► plain `shadowcode …` lines (shown, not run)
 *                             └─► files the README says to create (`# path` first line)
 *   a command line ─► words (quotes, `~`, `VAR=…` prefixes, `|`, `# comment`)
 *                  ─► parseArgv: the command exists and takes these options and arguments
 */
import { readFileSync } from 'node:fs';
import { group, lookup } from '../../src/cli/commands/index.js';
import { parseCommand, splitGlobals } from '../../src/cli/parse.js';
import type { CommandSpec } from '../../src/cli/spec.js';
import { ROOT } from '../fixtures/env.js';

export const README = readFileSync(`${ROOT}/README.md`, 'utf8');

export interface Block {
  readonly lang: string;
  /** 1-based README line of the first line inside the fence. */
  readonly line: number;
  readonly lines: readonly string[];
}

export function blocks(md: string): Block[] {
  const out: Block[] = [];
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j] as string); j++) body.push((lines[j] as string).slice(indent));
    out.push({ lang: open[2] as string, line: i + 2, lines: body });
    i = j;
  }
  return out;
}

export interface Example {
  readonly line: number;
  /** The command as written after `$ `, comment included. */
  readonly command: string;
  /** The output lines shown under it; a line `…` stands for any number of lines. */
  readonly output: readonly string[];
}

/** `$ ` lines of shell and terminal blocks, each with the lines shown under it up to the next `$ `. */
export function examples(block: Block): Example[] {
  if (block.lang !== 'sh' && block.lang !== 'text') return [];
  const out: Array<{ line: number; command: string; output: string[] }> = [];
  block.lines.forEach((l, i) => {
    if (l.startsWith('$ ')) out.push({ line: block.line + i, command: l.slice(2), output: [] });
    else out.at(-1)?.output.push(l);
  });
  return out;
}

/** Plain command lines of shell blocks that have no `$ ` prompt (shown to be typed, not run here), continuations joined. */
export function plainCommands(block: Block): Array<{ line: number; command: string }> {
  if (block.lang !== 'sh' || block.lines.some((l) => l.startsWith('$ '))) return [];
  const out: Array<{ line: number; command: string }> = [];
  for (let i = 0; i < block.lines.length; i++) {
    const start = i;
    let text = block.lines[i] as string;
    while (text.endsWith('\\') && i + 1 < block.lines.length) text = `${text.slice(0, -1)} ${block.lines[++i]}`;
    if (text.trim() && !text.trim().startsWith('#')) out.push({ line: block.line + start, command: text });
  }
  return out;
}

/** A code block whose first line is `# PATH` (a YAML comment) is a file the README asks you to create. */
export function fileOf(block: Block): { path: string; text: string } | undefined {
  const m = /^# (\S+\.(?:ya?ml|json))$/.exec(block.lines[0] ?? '');
  if (!m || (block.lang !== 'yaml' && block.lang !== 'yml')) return undefined;
  return { path: m[1] as string, text: `${block.lines.join('\n')}\n` };
}

export interface Words {
  /** `VAR=value` words before the command. */
  readonly assignments: readonly string[];
  readonly argv: readonly string[];
}

/**
 * Splits a command line into pipeline stages of words, as sh would for these
 * examples: '…' and "…" quoting (`$(…)` inside double quotes kept as written),
 * backslash escapes, `~` or `~/` at a word's start, `|` between stages, and a
 * `#` comment at a word's start.
 */
export function shellWords(line: string, home: string): Words[] {
  const stages: string[][] = [[]];
  let word: string | undefined;
  const end = () => {
    if (word !== undefined) (stages.at(-1) as string[]).push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === ' ' || c === '\t') end();
    else if (c === '|' && word === undefined) stages.push([]);
    else if (c === '#' && word === undefined) break;
    else if (c === "'") {
      const close = line.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let s = '';
      for (i++; i < line.length && line[i] !== '"'; i++) s += line[i] === '\\' && /["\\$`]/.test(line[i + 1] ?? '') ? line[++i] : line[i];
      if (i >= line.length) throw new Error(`unclosed " in ${line}`);
      word = (word ?? '') + s;
    } else if (c === '\\') word = (word ?? '') + (line[++i] ?? '');
    else if (c === '~' && word === undefined && (line[i + 1] === '/' || line[i + 1] === ' ' || i + 1 === line.length)) word = home;
    else word = (word ?? '') + c;
  }
  end();
  return stages.map((words) => {
    let n = 0;
    while (n < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[n] as string)) n++;
    return { assignments: words.slice(0, n), argv: words.slice(n) };
  });
}

/** How a shadowcode invocation is written: `shadowcode …` or, from a checkout, `node bin/shadowcode.js …`. */
export function shadowcodeArgv(argv: readonly string[]): string[] | undefined {
  if (argv[0] === 'shadowcode') return argv.slice(1);
  if (argv[0] === 'node' && argv[1] === 'bin/shadowcode.js') return argv.slice(2);
  return undefined;
}

/**
 * Checks an argv the way the CLI would before running anything: the command
 * exists and every option and argument is one it takes. Returns the command
 * (undefined for `--version`/`--help` alone) or throws the CLI's own ScError.
 */
export async function parseArgv(argv: readonly string[]): Promise<CommandSpec | undefined> {
  const { globals, rest } = splitGlobals(argv);
  const words: string[] = [];
  for (const w of rest) {
    if (w.startsWith('-')) break;
    words.push(w);
  }
  if (words.length === 0) {
    if ((globals.version || globals.help) && rest.length === 0) return undefined;
    throw new Error(`no command in ${argv.join(' ')}`);
  }
  const found = lookup(words);
  if (!found) throw new Error(`no command ${words.join(' ')}`);
  const { command } = await found.entry.load();
  const next = words[found.used];
  if (next !== undefined && group(command.name).length && command.args.length === 0) throw new Error(`${command.name} has no subcommand ${next}`);
  parseCommand(command, rest.slice(found.used));
  return command;
}
