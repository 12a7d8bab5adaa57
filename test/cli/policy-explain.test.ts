import t from 'tap';
import { cli, sandbox } from '../fixtures/env.js';

t.test('policy explain shows the rules that decide, without doing anything', async (t) => {
  const sb = sandbox();
  const denied = JSON.parse((await cli(sb, ['--json', '--workspace', sb.project, 'policy', 'explain', 'tool:shadow_memory.append', '--allow-write'])).stdout);
  t.equal(denied.allow, false);
  t.same(denied.rules.map((r: { id: string }) => r.id).sort(), ['write-needs-trust', 'write-needs-workspace-level']);
  await cli(sb, ['--workspace', sb.project, 'trust']);
  const allowed = await cli(sb, ['--workspace', sb.project, 'policy', 'explain', 'tool:shadow_memory.append', '--allow-write']);
  t.match(allowed.stdout, /^ALLOW tool:shadow_memory.append \(ceiling workspace\)\n {2}permit write:/);
  const bad = await cli(sb, ['--json', 'policy', 'explain', 'Not An Action']);
  t.equal(JSON.parse(bad.stdout).error.code, 'SC_POLICY_REQUEST_INVALID');
});
