/*
 * argv ─► global options + command words ─► the command's own options and args.
 *
 * Global options may stand anywhere before `--`. Everything a command does not
 * declare is a usage error (exit 2) with a stable code, never silently ignored.
 */
import { ScError } from '../errors.js';
import type { Globals } from './context.js';
import type { CommandSpec, Input, OptionSpec } from './spec.js';
import { nearest } from '../util/suggest.js';

/** Value options and the field each sets: --project is the project; --workspace, its older name, stays an alias. */
const GLOBAL_VALUE: Record<string, 'workspace' | 'profile'> = { '--project': 'workspace', '--workspace': 'workspace', '--profile': 'profile' };
/** Every global option's long name, for suggestions. */
export const GLOBAL_OPTIONS: readonly string[] = ['--project', '--workspace', '--profile', '--json', '--help', '--version'];
const GLOBAL_FLAG: Record<string, 'json' | 'help' | 'version'> = { '--json': 'json', '--help': 'help', '-h': 'help', '--version': 'version', '-V': 'version', '-v': 'version' };

export function splitGlobals(argv: readonly string[]): { globals: Globals; rest: string[] } {
  const globals: Globals = { json: false, help: false, version: false };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const eq = a.indexOf('=');
    const key = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const field = Object.prototype.hasOwnProperty.call(GLOBAL_VALUE, key) ? GLOBAL_VALUE[key] : undefined;
    if (field) {
      const value = eq > 0 && key !== a ? a.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '') throw new ScError('SC_USAGE', `${key} needs a value`);
      if (globals[field] !== undefined) throw new ScError('SC_USAGE', field === 'workspace' ? 'the project was given twice (--project and --workspace name the same thing)' : `${key} given twice`);
      globals[field] = value;
    } else if (GLOBAL_FLAG[a]) {
      globals[GLOBAL_FLAG[a]] = true;
    } else {
      rest.push(a);
    }
  }
  return { globals, rest };
}

function findOption(spec: CommandSpec, name: string): OptionSpec | undefined {
  return spec.options.find((o) => `--${o.name}` === name);
}

export function parseCommand(spec: CommandSpec, words: readonly string[]): Input {
  const options: Record<string, string | boolean | string[] | undefined> = {};
  const args: string[] = [];
  let onlyArgs = false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (!onlyArgs && w === '--') {
      onlyArgs = true;
      continue;
    }
    if (!onlyArgs && w.startsWith('-') && w !== '-') {
      const eq = w.indexOf('=');
      const name = eq > 0 ? w.slice(0, eq) : w;
      const opt = findOption(spec, name);
      if (!opt) {
        const suggestion = nearest(name, [...spec.options.map((o) => `--${o.name}`), ...GLOBAL_OPTIONS]);
        throw new ScError('SC_UNKNOWN_OPTION', `${spec.name} has no option ${name}${suggestion ? `; did you mean ${suggestion}?` : ''} (see shadowcode help ${spec.name})`, { option: name, ...(suggestion ? { suggestion } : {}) });
      }
      if (opt.type === 'boolean') {
        if (eq > 0) throw new ScError('SC_BAD_VALUE', `${name} takes no value`);
        options[opt.name] = true;
        continue;
      }
      const value = eq > 0 ? w.slice(eq + 1) : words[++i];
      if (value === undefined) throw new ScError('SC_USAGE', `${name} needs a value${opt.value ? ` (${opt.value})` : ''}`);
      if (opt.choices && !opt.choices.includes(value)) {
        // The value is not echoed (it may be a secret in the wrong place); the nearest choice is.
        const suggestion = nearest(value, opt.choices);
        throw new ScError('SC_BAD_VALUE', `${name} must be one of ${opt.choices.join(', ')}${suggestion ? `; did you mean ${suggestion}?` : ''}`, { option: name, ...(suggestion ? { suggestion } : {}) });
      }
      if (opt.type === 'strings') {
        const prev = options[opt.name];
        options[opt.name] = [...(Array.isArray(prev) ? prev : []), value];
      } else {
        if (options[opt.name] !== undefined) throw new ScError('SC_USAGE', `${name} given twice`);
        options[opt.name] = value;
      }
      continue;
    }
    args.push(w);
  }
  const required = spec.args.filter((a) => a.required).length;
  if (args.length < required) {
    throw new ScError('SC_USAGE', `${spec.name} needs ${spec.args.filter((a) => a.required).map((a) => a.name).join(' ')}; see shadowcode ${spec.name} --help`);
  }
  if (args.length > spec.args.length && !spec.args[spec.args.length - 1]?.variadic) {
    // The extra word is not echoed: it may be a secret pasted where it does not belong.
    throw new ScError('SC_USAGE', `${spec.name} takes ${spec.args.length ? spec.args.map((a) => a.name).join(' ') : 'no arguments'}; got ${args.length} arguments${spec.usageHint ? `. ${spec.usageHint}` : ''}`);
  }
  for (const o of spec.options) if (options[o.name] === undefined && o.default !== undefined) options[o.name] = o.default;
  return { options, args };
}
