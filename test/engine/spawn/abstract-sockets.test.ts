// Abstract unix sockets (a name in the network namespace, not a file: an X11 display's
// `@/tmp/.X11-unix/X0`, some D-Bus buses) and the sandbox, with a real bwrap:
//
//   network off (the default) ─► its own network namespace ─► the host's abstract sockets are not there
//   network shared (trust --network, a coding-CLI runner) ─► the host's namespace ─► reachable:
//     accepted and documented (docs/sandbox.md, "What the sandbox does not stop")
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import t from 'tap';
import { confinedCommand, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { sealed } from '../../../src/engine/spawn/fds.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { sandbox } from '../../fixtures/env.js';
import { marked } from '../../fixtures/sandboxed.js';

const NAME = `sc-abstract-${process.pid}`;
const probe = `/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); print("@", "refused" if s.connect_ex("\\0${NAME}") else "connected")'`;

/** A real listener on the abstract name, in the host's namespace (python: node pads the name with NULs to its full length, another name). */
async function listening(t: any) {
  const server = spawn('/usr/bin/python3', ['-c', `import socket, time; s = socket.socket(socket.AF_UNIX); s.bind("\\0${NAME}"); s.listen(); print("ready", flush=True); time.sleep(120)`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => server.kill('SIGKILL'));
  await new Promise<void>((r) => server.stdout.once('data', () => r()));
}

function run(network: boolean): Promise<string> {
  const sb = sandbox('abstract');
  mkdirSync(sb.profile, { recursive: true, mode: 0o700 });
  const c = confinedCommand({ argv: ['sh', '-c', probe], cwd: sb.project, env: { PATH: '/usr/bin:/bin', HOME: sb.root }, confine: { project: sb.project, network }, trustedArgv: false, policy: shippedPolicy() }, sandboxSupport().bwrap as string, sb.profile);
  const s = sealed(c.argv, ['ignore', 'pipe', 'pipe'], c.bwrapAt ?? 0, [], c.filter);
  const child = spawn(s.argv[0] as string, s.argv.slice(1), { cwd: sb.project, env: c.env, stdio: s.stdio });
  s.feed(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('close', () => (c.release(), resolve(out))));
}

t.test('outside any sandbox the probe reaches the abstract socket (the control)', async (t) => {
  await listening(t);
  const child = spawn('sh', ['-c', probe], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await new Promise((r) => child.on('close', r));
  t.strictSame(marked(out), ['connected']);
});

t.test('with the network off, a sandboxed process cannot reach an abstract socket of the host', async (t) => {
  await listening(t);
  const out = await run(false);
  t.strictSame(marked(out), ['refused'], out);
});

t.test('with the network shared it can: the documented, accepted exposure', async (t) => {
  await listening(t);
  const out = await run(true);
  t.strictSame(marked(out), ['connected'], out);
});
