/*
 * shadowcode console [--port N] [--open] | --code
 *
 *   --port ─► console/open.ts openConsole (gate cli:serve.console ─► startConsole, loopback)
 *   ─► the address with its one-time code on stdout
 *   ─► --open: gate cli:console.open ─► the desktop's opener ─► runs until SIGINT, SIGTERM or SIGHUP
 *   --code: gate cli:console.code ─► a new code in the running console's record ─► its address
 *
 * The console acts with the CLI user's authority; its decisions are audited with owner
 * `console`, so the log tells them from the terminal's.
 */
import { mintCode } from '../../console/codes.js';
import { openConsole } from '../../console/open.js';
import { openInBrowser } from '../../engine/spawn/index.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { nextStopSignal } from '../../util/stop-signals.js';
import type { CommandSpec, Output } from '../spec.js';

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
    const h = await openConsole(ctx.ops, port, (l) => ctx.io.stderr.write(`${l}\n`));
    // Listening for the stop signals before anything else, so a Ctrl-C during --open still closes cleanly.
    const stop = nextStopSignal();
    ctx.io.stdout.write(`shadowcode console: open ${h.url}\n(the code works once; for another browser run shadowcode console --code)\n`);
    if (options.open === true) {
      const opened = await enforce(ctx.gate(), ctx.request('cli:console.open'), (t) => openInBrowser(t, h.url, ctx.io.env));
      if (!opened) ctx.io.stderr.write('shadowcode console: no browser opener (xdg-open) was found; open the address above yourself\n');
    }
    const signal = await stop.signal;
    await h.close();
    stop.off();
    return { data: null, text: `shadowcode console: ${signal}: stopped` };
  },
};
