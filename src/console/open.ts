/*
 * The console for one profile, started by `shadowcode console` (and by tests).
 *
 *   openConsole(ops, port)  ops: the CLI user's context on the profile (no project)
 *   ─► a context per trusted project, owner `console` (made once, on first use)
 *   ─► gate cli:serve.console (the CLI user starts it) ─► startConsole (loopback)
 *
 * The console acts with the CLI user's authority; its decisions are audited with owner
 * `console`, so the log tells them from the terminal's.
 */
import { ScError } from '../errors.js';
import { canonicalWorkspace, OpsSession } from '../ops/context.js';
import { enforce } from '../policy/gate.js';
import { getProject } from '../store/projects.js';
import type { Api } from './api.js';
import { readRecord } from './codes.js';
import { type ConsoleHandle, startConsole } from './server.js';

/** The console's own contexts: the CLI user, seen in the audit as `console`, one per trusted project. */
function consoleApi(ops: OpsSession): Api & { close(): void } {
  const policy = ops.policy;
  // A project is checked as --project is (it still exists, as a folder), at its real path.
  const make = (project?: string) => new OpsSession({ profileDir: ops.profileDir, project: project === undefined ? undefined : canonicalWorkspace(project, '/'), env: ops.env, policy, owner: 'console' });
  const profile = make(undefined);
  const byProject = new Map<string, OpsSession>();
  return {
    profile,
    auditPage: policy.limits.console.audit_page_size,
    eventPage: policy.limits.jobs.event_page_size,
    project(path) {
      if (typeof path !== 'string' || !path) throw new ScError('SC_BAD_VALUE', 'project must name a trusted project');
      let c = byProject.get(path);
      if (!c) {
        if (!getProject(profile.db(), path).trusted) throw new ScError('SC_WORKSPACE_INVALID', `${path} is not a trusted project of this profile`);
        c = make(path);
        byProject.set(path, c);
      }
      return c;
    },
    close() {
      for (const c of byProject.values()) c.close();
      profile.close();
    },
  };
}

/** Starts the console for the profile of `ops`; `log` gets its one-line notices. */
export async function openConsole(ops: OpsSession, port: number | undefined, log: (line: string) => void): Promise<ConsoleHandle> {
  const L = ops.policy.limits.console;
  const running = readRecord(ops.profileDir);
  if (running && running.pid !== process.pid) throw new ScError('SC_USAGE', `a console already runs for this profile at ${running.url}; for another browser run shadowcode console --code`);
  const api = consoleApi(ops);
  const chosen = port ?? L.port;
  try {
    const h = await enforce(ops.gate, ops.request('cli:serve.console', { args: { port: chosen } }), (t) =>
      startConsole(t, { api, profileDir: ops.profileDir, port: chosen, limits: L, pageSize: ops.policy.limits.inspection.page_size_max, log }),
    );
    return {
      ...h,
      close: async () => {
        await h.close();
        api.close();
      },
    };
  } catch (err) {
    api.close();
    throw err;
  }
}
