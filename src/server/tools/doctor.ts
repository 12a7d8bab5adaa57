/* shadow_doctor: diagnostics without repairs; the model probe only when asked. */
import { type Check, diagnose } from '../../engine/doctor.js';
import { probeModels } from '../../engine/model-probe.js';
import { telemetryHere, telemetryStatus } from '../../ops/telemetry.js';
import { getProject } from '../../store/projects.js';
import type { Connection } from '../connection.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  probe_models?: boolean;
}

/** The export of this server's process: what it sent, dropped and failed to send (or why there is none). */
function telemetryCheck(conn: Connection): Check {
  const here = telemetryHere();
  if (!here) {
    const s = telemetryStatus({ profileDir: conn.engine.profileDir, env: conn.engine.env, policy: conn.engine.policy });
    return { id: 'telemetry', status: s.state === 'invalid' ? 'warn' : 'ok', detail: s.state === 'on' ? `this process does not export (it started before the settings changed): ${s.why}` : `off: ${s.why}` };
  }
  const lost = (['traces', 'logs', 'metrics'] as const).filter((k) => here[k].dropped || here[k].failed);
  const said = (['traces', 'logs', 'metrics'] as const).map((k) => `${k} ${here[k].exported} sent, ${here[k].dropped} dropped, ${here[k].failed} failed`).join('; ');
  return { id: 'telemetry', status: lost.length ? 'warn' : 'ok', detail: `exporting to ${here.endpoint}: ${said}${here.last_error ? `; last error: ${here.last_error}` : ''}` };
}

export const shadowDoctor: ToolDef<Args> = {
  name: 'shadow_doctor',
  annotations: READ_ONLY,
  action: (a) => (a.probe_models ? 'tool:shadow_doctor.probe' : 'tool:shadow_doctor'),
  async run(conn, args, ticket) {
    const e = conn.engine;
    const checks = [...diagnose({ profileDir: e.profileDir, project: conn.project, db: e.db(), policy: e.policy, settings: () => e.settings(), secrets: e.secrets(), env: e.env }), telemetryCheck(conn)];
    const probes = args.probe_models ? await probeModels(ticket, e.settings(), e.policy.limits.inspection.model_probe_ms, getProject(e.db(), conn.project).network) : null;
    const worst = checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'ok';
    return { status: worst, checks, model_probes: probes, telemetry: telemetryHere() };
  },
};
