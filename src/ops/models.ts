/*
 * The profile's models as operations: configure one (an endpoint, or a coding CLI runner),
 * list them, remove one, probe one. A key is named (an environment variable or a stored
 * secret), never given; nothing is contacted but by a probe.
 *
 *   addModel(ops, entry)     ─► base URL checked (plain http/https, no credentials, query or
 *                               fragment), a key only over https unless loopback
 *                               ─► gate cli:model.add ─► settings.json ─► {model, endpoint, default, credential}
 *   addRunner(ops, entry)    ─► a literal absolute executable and fixed arguments, checked
 *                               ─► gate cli:model.add ─► settings.json
 *   listModels(ops)          ─► each model, whether its key is present; runners: gate cli:model.list
 *                               ─► each runner's executable found, its --version
 *   removeModel(ops, id)     ─► gate cli:model.remove ─► gone (and the default, when it was that one)
 *   probeModel(ops, id)      ─► gate cli:model.probe ─► the endpoint asked once (no prompt), or
 *                               the runner's --version
 */
import { probeModel as probeEndpoint } from '../agent/providers/probe.js';
import { checkKeyTransport } from '../agent/providers/index.js';
import { isRunnerProvider } from '../agent/runners/index.js';
import { probeRunner } from '../agent/runners/probe.js';
import { runnerModelEntry } from '../agent/runners/register.js';
import { checkBaseUrl, credentialPresent, endpointOf, listModels as modelViews, type SettingsModel } from '../engine/models.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { readSettings, updateSettings } from '../store/settings.js';
import { didYouMean } from '../util/suggest.js';
import type { OpsContext } from './context.js';

export type { SettingsModel };

export interface ModelInput {
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  readonly base_url?: string;
  readonly api_key_env?: string;
  readonly api_key_secret?: string;
  readonly context_tokens?: number;
  /** Make it the default (the first model is the default anyway). */
  readonly default?: boolean;
}

export interface RunnerInput {
  readonly id: string;
  readonly provider: string;
  readonly command?: string;
  readonly args?: readonly string[];
  readonly model?: string;
  /** Given for a runner, these are mistakes: it signs in by itself. */
  readonly base_url?: string;
  readonly key_named?: boolean;
  readonly default?: boolean;
}

export interface AddedModel {
  readonly model: SettingsModel;
  readonly endpoint: 'loopback' | 'remote' | 'cli';
  readonly default: boolean;
  readonly credential: 'present' | 'missing' | 'not_needed';
}

type ModelView = ReturnType<typeof modelViews>[number];
type RunnerProbe = Awaited<ReturnType<typeof probeRunner>>;
export type ListedModel = ModelView | (ModelView & { runner: { command: string; args: string[]; found: boolean; version: string | null; status: string; detail: string } });

const exists = (id: string) => new ScError('SC_MODEL_EXISTS', `a model named ${id} is configured; remove it first (shadowcode model remove ${id})`);
const notFound = (id: string, ids: string[]) => new ScError('SC_MODEL_NOT_FOUND', `no model named ${id.slice(0, 64)}${didYouMean(id, ids) || '; see shadowcode model list'}`);

/** Adds `m` to the settings (the default when asked, or when there is none), through the gate's ticket. */
async function store(ops: OpsContext, m: SettingsModel, makeDefault: boolean, args: Record<string, unknown>): Promise<boolean> {
  const db = ops.db();
  const saved = await enforce(ops.gate, ops.request('cli:model.add', { args: { id: m.id, provider: m.provider, ...args, default: makeDefault } }), (t) =>
    updateSettings(t, ops.profileDir, db, (s) => {
      if ((s.models ?? []).some((x) => x.id === m.id)) throw exists(m.id);
      return { ...s, models: [...(s.models ?? []), m], ...(makeDefault || !s.default_model ? { default_model: m.id } : {}) };
    }, 'SC_BAD_VALUE'),
  );
  return saved.default_model === m.id;
}

export async function addModel(ops: OpsContext, input: ModelInput): Promise<AddedModel & { readonly url: string }> {
  const entry: Record<string, unknown> = { id: input.id, provider: input.provider, model: input.model };
  if (input.base_url !== undefined) entry.base_url = checkBaseUrl(input.base_url).toString();
  if (input.api_key_env) entry.api_key_env = input.api_key_env;
  if (input.api_key_secret) entry.api_key_secret = input.api_key_secret;
  if (input.context_tokens !== undefined) entry.context_tokens = input.context_tokens;
  const m = entry as unknown as SettingsModel;
  const ep = endpointOf(m);
  checkKeyTransport(m.id, ep, Boolean(m.api_key_env || m.api_key_secret));
  const isDefault = await store(ops, m, input.default === true, { endpoint_kind: ep.loopback ? 'loopback' : 'remote' });
  const keyName = m.api_key_env ?? m.api_key_secret;
  const secrets = keyName ? ops.secrets() : undefined;
  const present = keyName && secrets ? (m.api_key_env ? credentialPresent(keyName, ops.env, secrets) : secrets.has(keyName)) : null;
  return { model: m, endpoint: ep.loopback ? 'loopback' : 'remote', default: isDefault, credential: keyName ? (present ? 'present' : 'missing') : 'not_needed', url: ep.url.toString() };
}

export async function addRunner(ops: OpsContext, input: RunnerInput): Promise<AddedModel> {
  const m = runnerModelEntry(input.id, input.provider, {
    ...(input.command !== undefined ? { command: input.command } : {}),
    args: input.args ?? [],
    ...(input.model !== undefined ? { model: input.model } : {}),
    ...(input.base_url !== undefined ? { baseUrl: input.base_url } : {}),
    keyNamed: input.key_named === true,
  });
  const isDefault = await store(ops, m, input.default === true, { command: m.command, args: m.args });
  return { model: m, endpoint: 'cli', default: isDefault, credential: 'not_needed' };
}

export async function listModels(ops: OpsContext): Promise<{ models: ListedModel[]; default_model: string | null }> {
  const s = readSettings(ops.profileDir);
  const entries = s.models ?? [];
  const runners = entries.filter((m) => isRunnerProvider(m.provider));
  const policy = ops.policy;
  const db = ops.db();
  const probes = runners.length
    ? await enforce(ops.gate, ops.request('cli:model.list', { args: { runners: runners.map((m) => m.id) } }), (t) => Promise.all(runners.map((m) => probeRunner(t, m, policy, db, ops.env))))
    : [];
  const models = modelViews(s, ops.env, ops.secrets()).map((v): ListedModel => {
    const entry = entries.find((m) => m.id === v.id);
    const p = probes.find((x) => x.id === v.id);
    return p && entry ? { ...v, runner: { command: p.command, args: entry.args ?? [], found: p.found, version: p.version, status: p.status, detail: p.detail } } : v;
  });
  return { models, default_model: s.default_model ?? null };
}

export async function removeModel(ops: OpsContext, id: string): Promise<{ id: string; removed: true; was_default: boolean }> {
  let wasDefault = false;
  const db = ops.db();
  await enforce(ops.gate, ops.request('cli:model.remove', { args: { id } }), (t) =>
    updateSettings(t, ops.profileDir, db, (s) => {
      if (!(s.models ?? []).some((m) => m.id === id)) throw notFound(id, (s.models ?? []).map((m) => m.id));
      wasDefault = s.default_model === id;
      const { default_model, ...rest } = s;
      return { ...rest, models: (s.models ?? []).filter((m) => m.id !== id), ...(wasDefault || default_model === undefined ? {} : { default_model }) };
    }),
  );
  return { id, removed: true, was_default: wasDefault };
}

export async function probeModel(ops: OpsContext, id: string): Promise<{ readonly runner: RunnerProbe } | { readonly endpoint: Awaited<ReturnType<typeof probeEndpoint>> }> {
  const models = readSettings(ops.profileDir).models ?? [];
  const entry = models.find((m) => m.id === id);
  if (!entry) throw notFound(id, models.map((m) => m.id));
  if (isRunnerProvider(entry.provider)) {
    const policy = ops.policy;
    const db = ops.db();
    return { runner: await enforce(ops.gate, ops.request('cli:model.probe', { args: { id } }), (t) => probeRunner(t, entry, policy, db, ops.env)) };
  }
  const secrets = ops.secrets();
  return { endpoint: await enforce(ops.gate, ops.request('cli:model.probe', { args: { id } }), (t) => probeEndpoint(t, entry, { env: ops.env, secrets, limits: ops.policy.limits.models })) };
}
