// The library opens a profile given by a path the way the CLI opens --profile PATH: at its real
// path, so a host and the terminal on the same profile share one store, one engine socket and
// one audit log whatever link either reached it through.
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { open } from '../../src/lib/index.js';
import { cli, sandbox } from '../fixtures/env.js';

t.test('a profile reached through a link is the real profile: same path, same store as the CLI', async (t) => {
  const sb = sandbox('sc-lib-profile');
  mkdirSync(sb.profile, { recursive: true, mode: 0o700 });
  const link = join(sb.root, 'profile-link');
  symlinkSync(sb.profile, link);
  const sc = await open({ profile: link, project: sb.project });
  t.teardown(() => sc.close());
  const st = await sc.status();
  t.equal(st.profile.path, sb.profile, 'status names the real profile directory');
  t.equal(st.engine.socket, join(sb.profile, 'engine.sock'), 'and the socket a shared engine of that profile listens on');
  // What the CLI does on the profile, the host sees: one store.
  t.equal((await cli(sb, ['--project', sb.project, 'trust'])).code, 0);
  t.match(await sc.status(), { project: { path: sb.project, trusted: true } });
});
