/*
 * The bridge inside a sandbox whose process may reach granted hosts. The
 * sandbox has a network of its own with nothing but loopback; the proxy that
 * decides each connection runs outside (net-proxy.ts) and listens on a unix
 * socket bound into the sandbox. This small program is the sandbox's first
 * process: it listens on the sandbox's own 127.0.0.1, forwards each connection
 * to that socket byte for byte, and starts the real command with the standard
 * proxy variables pointing at itself.
 *
 *   argv: SOCKET -- COMMAND...
 *   listen 127.0.0.1:0 (inside) ─► port ─► HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy,
 *     NO_PROXY/no_proxy (loopback stays inside), NODE_USE_ENV_PROXY ─► COMMAND (stdio its own)
 *   a connection ─► unix SOCKET ─► proxy outside: gate decision per host ─► the host, or 403
 *   COMMAND exits ─► the same code, or the same signal; TERM/INT/HUP passed on to it
 *
 * It decides nothing and reads nothing: a process inside could as well connect to
 * the socket itself, and the proxy is what refuses.
 */
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { constants } from 'node:os';

const [socketPath, dashes, ...argv] = process.argv.slice(2);
if (!socketPath || dashes !== '--' || argv.length === 0) {
  process.stderr.write('net-bridge: usage: net-bridge SOCKET -- COMMAND...\n');
  process.exit(126);
}

const server = createServer((inside) => {
  const outside = connect(socketPath as string);
  const end = () => {
    inside.destroy();
    outside.destroy();
  };
  inside.on('error', end);
  outside.on('error', end);
  inside.pipe(outside);
  outside.pipe(inside);
});
server.on('error', (err) => {
  process.stderr.write(`net-bridge: cannot listen inside the sandbox: ${err.message}\n`);
  process.exit(126);
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const local = 'localhost,127.0.0.1,::1';
  const env = { ...process.env, HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: local, no_proxy: local, NODE_USE_ENV_PROXY: '1' };
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: 'inherit', env, shell: false });
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(s, () => child.kill(s));
  child.on('error', (err) => {
    const code = (err as NodeJS.ErrnoException).code;
    process.stderr.write(`${argv[0]}: ${code === 'ENOENT' ? 'No such file or directory' : err.message}\n`);
    process.exit(code === 'ENOENT' ? 127 : 126);
  });
  child.on('exit', (code, signal) => {
    server.close();
    if (signal) {
      // The same death the command died, so bwrap and the supervisor report what it did.
      for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.removeAllListeners(s);
      process.kill(process.pid, signal);
      // A signal whose default is not to end a process (one the command caught to die by): the shell's convention.
      setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 50);
      return;
    }
    process.exit(code ?? 1);
  });
});
