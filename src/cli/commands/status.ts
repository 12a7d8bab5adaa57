/* shadowcode status: what this invocation would act on, and with which policy (ops/status.ts), in lines. */
import type { Status } from '../../../gen/types/status.js';
import { status } from '../../ops/status.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'status',
  summary: 'Show the project, its trust, the profile, its engine, versions, policy hash, sandbox and telemetry',
  options: [],
  args: [],
  examples: ['shadowcode --project ~/src/app status', 'shadowcode --json status'],
  workspace: 'optional',
  async run(ctx) {
    const data = await status(ctx.ops);
    const project = data.project;
    const shared = data.engine.mode === 'shared';
    const lines = [
      project
        ? `project   ${inert(project.path)}${project.holds_home ? '\nrefused   it is /, your home folder or holds it: trust, tasks, tests and commands are refused here (rule project-holds-home)' : ''}\ntrust     ${project.trusted ? `trusted at ${project.level} since ${project.trusted_at}` : 'not trusted (read_only)'}\nnetwork   ${project.network ? 'allowed: tasks may reach remote models and servers' : 'off: loopback models and servers only'}`
        : 'project   none selected (use --project DIR)',
      `profile   ${inert(data.profile.path)}`,
      `engine    ${shared ? `shared, pid ${data.engine.pid} on ${inert(data.engine.socket)}` : 'temporary (no shared engine running; each server runs its own jobs)'}`,
      `versions  shadowcode ${data.versions.shadowcode}, node ${data.versions.node}, sqlite ${data.versions.sqlite}`,
      `protocols ${data.versions.protocols.join(', ')}`,
      `policy    ${data.policy.hash} (${data.policy.rules} rules)`,
      `telemetry ${telemetryLine(data.telemetry!)}`,
      `sandbox   ${data.sandbox.level === 'none' ? `unsandboxed: ${inert(data.sandbox.detail)}${data.sandbox.require ? '; policy requires a sandbox, so nothing will start' : '; processes run with your full access'}` : `sandboxed: ${inert(data.sandbox.detail)}`}`,
    ];
    return { data, text: lines.join('\n') };
  },
};

/** One line: off and why, or where each signal goes (a remote host said so), and what was lost. */
function telemetryLine(s: NonNullable<Status['telemetry']>): string {
  if (s.state !== 'on') return `${s.state}: ${inert(s.why)}`;
  const lost = s.dropped || s.failed ? `; recent processes dropped ${s.dropped} and failed to send ${s.failed} items (telemetry show)` : '';
  const remote = s.remote ? ' — REMOTE: spans, audit rows and metrics leave this machine' : '';
  return `on (${s.source === 'env' ? 'OTEL_* variables' : 'profile'}): ${s.endpoints.map(inert).join(', ')}${remote}${s.content ? '; content exported, scrubbed' : ''}${lost}`;
}
