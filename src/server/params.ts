/*
 * The params of prompts/get and resources/read, checked by us.
 *
 *   request.params ─► ANY_PARAMS (the SDK's hook, passes everything through)
 *                  ─► promptParams / resourceParams ─► typed params, or SC_TOOL_ARGS_INVALID
 *
 * Registered with the spec schema, the SDK answers a malformed request with
 * -32603 and a raw parser dump; a bad request is the caller's error, so it
 * gets -32602 with a message naming the field, as tools/call does.
 */
import type { StandardSchemaV1 } from '@modelcontextprotocol/server';
import { ScError } from '../errors.js';
import type { PromptDef } from './prompts.js';

type Params = Record<string, unknown>;

export const ANY_PARAMS: StandardSchemaV1<Params, Params> = {
  '~standard': { version: 1, vendor: 'shadowcode', validate: (value) => ({ value: (value ?? {}) as Params }) },
};

function bad(method: string, what: string): never {
  throw new ScError('SC_TOOL_ARGS_INVALID', `${method}: ${what}`);
}

function isObject(v: unknown): v is Params {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function promptParams(p: Params, prompts: readonly PromptDef[]): { prompt: PromptDef; arguments: Record<string, string> } {
  if (typeof p.name !== 'string' || p.name === '') bad('prompts/get', 'params.name must be the name of a prompt (prompts/list shows them)');
  const prompt = prompts.find((x) => x.name === p.name);
  if (!prompt) throw new ScError('SC_TOOL_UNKNOWN', `no prompt ${JSON.stringify(p.name.slice(0, 128))}; prompts/list shows what exists`);
  const known = prompt.arguments.map((a) => a.name);
  const args = p.arguments ?? {};
  if (!isObject(args)) bad('prompts/get', 'params.arguments must be an object of strings');
  for (const [k, v] of Object.entries(args)) {
    if (!known.includes(k)) bad('prompts/get', `prompt ${prompt.name} takes ${known.length ? `only ${known.join(', ')}` : 'no arguments'}, not ${JSON.stringify(k.slice(0, 128))}`);
    if (typeof v !== 'string') bad('prompts/get', `params.arguments.${k} must be a string`);
  }
  for (const a of prompt.arguments) if (a.required && !(args as Params)[a.name]) bad('prompts/get', `prompt ${prompt.name} needs the argument ${a.name}`);
  return { prompt, arguments: args as Record<string, string> };
}

export function resourceParams(p: Params): { uri: string } {
  if (typeof p.uri !== 'string' || p.uri === '') bad('resources/read', 'params.uri must be a resource URI (resources/list shows them)');
  return { uri: p.uri };
}
