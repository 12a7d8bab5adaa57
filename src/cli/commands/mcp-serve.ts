/*
 * shadowcode mcp serve: serve this project's engine to one MCP client over
 * stdio. Stdout carries protocol only; every log line goes to stderr.
 */
import { Engine } from '../../engine/engine.js';
import { ScError } from '../../errors.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp serve',
  summary: 'Serve the project to an MCP client over stdio',
  description:
    'Serve the selected project to one MCP client over stdio (newline-delimited JSON-RPC). Read-only unless --allow-write; writes also need a trusted project and stay within its level. Stdout carries protocol only; logs go to stderr. Cannot be combined with --json.',
  options: [
    { name: 'allow-write', type: 'boolean', description: 'let this connection change a trusted project, up to its level' },
    { name: 'allow-approvals', type: 'boolean', description: 'let this connection approve its own pending actions (needs --allow-write)' },
  ],
  args: [],
  examples: ['shadowcode --workspace ~/src/app mcp serve', 'shadowcode --workspace ~/src/app mcp serve --allow-write'],
  workspace: 'required',
  json: false,
  async run(ctx, { options }) {
    const allowWrite = options['allow-write'] === true;
    const allowApprovals = options['allow-approvals'] === true;
    if (allowApprovals && !allowWrite) throw new ScError('SC_USAGE', '--allow-approvals needs --allow-write');
    // Nothing but protocol may reach stdout from here on.
    console.log = console.error;
    console.info = console.error;
    const { serveOverStdio } = await import('../../server/stdio.js');
    const engine = new Engine(ctx.profile.dir, ctx.policy(), ctx.io.env);
    const code = await serveOverStdio({
      engine,
      project: ctx.requireWorkspace('mcp serve'),
      allowWrite,
      allowApprovals,
      stdin: ctx.io.stdin as never,
      stdout: ctx.io.stdout,
      log: (line) => ctx.io.stderr.write(`${line}\n`),
    });
    return { data: null, text: '', exitCode: code };
  },
};
