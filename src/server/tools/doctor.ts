/* shadow_doctor: diagnostics without repairs; the model probe only when asked. */
import { diagnose } from '../../engine/doctor.js';
import { probeModels } from '../../engine/model-probe.js';
import { getProject } from '../../store/projects.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  probe_models?: boolean;
}

export const shadowDoctor: ToolDef<Args> = {
  name: 'shadow_doctor',
  annotations: READ_ONLY,
  action: (a) => (a.probe_models ? 'tool:shadow_doctor.probe' : 'tool:shadow_doctor'),
  async run(conn, args, ticket) {
    const e = conn.engine;
    const checks = diagnose({ profileDir: e.profileDir, project: conn.project, db: e.db(), policy: e.policy, settings: () => e.settings(), secrets: e.secrets(), env: e.env });
    const probes = args.probe_models ? await probeModels(ticket, e.settings(), e.policy.limits.inspection.model_probe_ms, getProject(e.db(), conn.project).network) : null;
    const worst = checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'ok';
    return { status: worst, checks, model_probes: probes };
  },
};
