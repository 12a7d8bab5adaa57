// Embeds shadowcode's HTTP gateway in a host program that decides approvals itself.
//
//   node examples/embed.mjs --profile DIR --project DIR
//
// The bearer token comes from the host (here: the EMBED_TOKEN variable, or a fresh random
// one that the host would hand to its own client). Commands whose program is on the
// host's allow list are approved; anything else is denied; nothing is left pending.
// Ctrl-C or SIGTERM closes the gateway: its jobs are cancelled and their processes reaped.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { open, ScError } from 'shadowcode';

const { values } = parseArgs({ options: { profile: { type: 'string' }, project: { type: 'string' } } });
const ALLOWED = new Set(['echo', 'sleep']);

try {
  const sc = await open({
    profile: values.profile,
    project: values.project,
    name: 'embed-example',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    log: (line) => console.error(line),
    onApproval(approval) {
      if (approval.kind !== 'command') return 'deny';
      const program = approval.action.argv?.[0] ?? '';
      const decision = ALLOWED.has(program) ? 'approve' : 'deny';
      console.log(JSON.stringify({ approval: approval.id, argv: approval.action.argv, decision }));
      return decision;
    },
  });
  const token = process.env.EMBED_TOKEN ?? randomBytes(32).toString('hex');
  const gateway = await sc.serveHttp({ token, allowWrite: true });
  console.log(JSON.stringify({ ready: gateway.url }));

  const stop = async () => {
    await sc.close();
    console.log(JSON.stringify({ closed: true }));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (err) {
  // Every failure is an ScError with a stable code; see docs/errors.md.
  console.error(err instanceof ScError ? `${err.code}: ${err.message}` : err);
  process.exitCode = 2;
}
