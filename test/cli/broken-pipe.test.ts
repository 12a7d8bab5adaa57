// A reader that goes away is not a crash: `shadowcode … | head -1`, or a host that closes
// its end of `mcp serve`'s stdout. Real processes, their stdout's reading end closed.
import { spawn } from 'node:child_process';
import t from 'tap';
import { BIN, sandbox, withCodeCache } from '../fixtures/env.js';
import { INIT } from '../fixtures/mcp.js';

/** Starts the CLI with the reading end of its stdout closed before it writes anything. */
function unread(sb: ReturnType<typeof sandbox>, argv: string[]) {
  const child = spawn(process.execPath, [BIN, ...argv], { cwd: sb.root, env: withCodeCache(sb.env), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, exit, err: () => err };
}

t.test('a command whose output nobody reads any more finishes quietly, exit 0, no stack trace', async (t) => {
  const sb = sandbox();
  const r = unread(sb, ['--help']);
  t.equal(await r.exit, 0, r.err());
  t.equal(r.err(), '', 'nothing on stderr: no "Unhandled \'error\' event", no EPIPE trace');
});

t.test('mcp serve whose client stopped reading closes the connection, says so once, and exits 1 like any fault', async (t) => {
  const sb = sandbox();
  const r = unread(sb, ['--project', sb.project, 'mcp', 'serve']);
  r.child.stdin.write(`${JSON.stringify(INIT)}\n`);
  t.equal(await r.exit, 1, r.err());
  t.equal(r.err(), 'shadowcode: closing the connection: output error: write EPIPE\n');
});
