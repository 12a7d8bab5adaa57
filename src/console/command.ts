/*
 * shadowcode console [--port N] [--open] | --code
 *
 *   gate cli:serve.console ─► startConsole (loopback) ─► the address with its one-time code on stdout
 *   ─► --open: gate cli:console.open ─► the desktop's opener ─► runs until SIGINT/SIGTERM
 *   --code: gate cli:console.code ─► a new code in the running console's record ─► its address
 *
 * The console acts with the CLI user's authority; its decisions are audited with owner
 * `console`, so the log tells them from the terminal's.
 */
import { Ctx } from '../cli/context.js';
import type { CommandSpec, Output } from '../cli/spec.js';
import { openInBrowser } from '../engine/spawn/index.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { getProject } from '../store/projects.js';
import type { Api } from './api.js';
import { mintCode, readRecord } from './codes.js';
import { type ConsoleHandle, startConsole } from './server.js';

/** The console's own Ctx for a project: the CLI user, seen in the audit as `console`. */
function consoleApi(ctx: Ctx): Api & { close(): void } {
  const policy = ctx.policy();
  const make = (workspace?: string) => new Ctx(ctx.io, { ...ctx.globals, workspace, json: true }, { policy, owner: 'console' });
  const profile = make(undefined);
  const byProject = new Map<string, Ctx>();
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

/** Starts the console for the profile of `ctx` (the command, and tests, call this). */
export async function openConsole(ctx: Ctx, port?: number, log: (line: string) => void = (l) => ctx.io.stderr.write(`${l}\n`)): Promise<ConsoleHandle> {
  const L = ctx.policy().limits.console;
  const running = readRecord(ctx.profile.dir);
  if (running && running.pid !== process.pid) throw new ScError('SC_USAGE', `a console already runs for this profile at ${running.url}; for another browser run shadowcode console --code`);
  const api = consoleApi(ctx);
  const chosen = port ?? L.port;
  try {
    const h = await enforce(ctx.gate(), ctx.request('cli:serve.console', { args: { port: chosen } }), (t) =>
      startConsole(t, { api, profileDir: ctx.profile.dir, port: chosen, limits: L, pageSize: ctx.policy().limits.inspection.page_size_max, log }),
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

export const command: CommandSpec = {
  name: 'console',
  summary: 'Serve a local page to watch tasks, decide approvals, review and roll back',
  description:
    "Serve one page on 127.0.0.1 for the profile: the tasks and jobs of every trusted project, live; pending approvals exactly as recorded (a command's argv, directory and the files the task changed; a write's complete diff; an external call's server, tool and arguments), approved or denied one at a time; a task's diff per file, why for a file and rollback; definitions, grants and a changed catalog with its accept; the audit log with its verification. The printed address carries a one-time code that the first visit exchanges for a cookie. It runs until Ctrl-C. With --code, mint a new code for another browser against the console already running.",
  options: [
    { name: 'port', type: 'string', value: 'N', description: 'the loopback port (default from policy console.port; 0 picks a free one)' },
    { name: 'open', type: 'boolean', description: "open the address in the desktop's browser (xdg-open, or open on macOS)" },
    { name: 'code', type: 'boolean', description: 'print a new one-time address for the console already running, and exit' },
  ],
  args: [],
  examples: ['shadowcode console', 'shadowcode console --open', 'shadowcode console --code'],
  workspace: 'ignored',
  json: false,
  async run(ctx, { options }): Promise<Output> {
    const L = ctx.policy().limits.console;
    if (options.code === true) {
      if (options.port !== undefined || options.open === true) throw new ScError('SC_USAGE', '--code takes no other option: it mints an address for the console already running');
      const r = await enforce(ctx.gate(), ctx.request('cli:console.code'), () => mintCode(ctx.profile.dir, L.code_ttl_ms));
      return { data: { url: r.url }, text: `${r.url}\n(one visit; valid for ${Math.round(L.code_ttl_ms / 60000)} minutes)` };
    }
    let port: number | undefined;
    if (typeof options.port === 'string') {
      port = Number(options.port);
      if (!/^\d{1,5}$/.test(options.port) || port > 65535) throw new ScError('SC_BAD_VALUE', `--port ${options.port}: give a port number 0-65535`);
    }
    const h = await openConsole(ctx, port);
    // Listening for the stop signals before anything else, so a Ctrl-C during --open still closes cleanly.
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    ctx.io.stdout.write(`shadowcode console: open ${h.url}\n(the code works once; for another browser run shadowcode console --code)\n`);
    if (options.open === true) {
      const opened = await enforce(ctx.gate(), ctx.request('cli:console.open'), (t) => openInBrowser(t, h.url, ctx.io.env));
      if (!opened) ctx.io.stderr.write('shadowcode console: no browser opener (xdg-open) was found; open the address above yourself\n');
    }
    const signal = await stopped;
    await h.close();
    return { data: null, text: `shadowcode console: ${signal}: stopped` };
  },
};
