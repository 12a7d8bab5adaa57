// shadowcode approvals, approvals approve and approvals deny: the pending action said exactly, for every kind.
import t from 'tap';
import { getApproval } from '../../src/engine/approvals.js';
import { runnerProject } from '../fixtures/runner-task.js';
import { cli } from '../fixtures/env.js';

t.test('approvals lists a command and an external call exactly, and a decision repeats what was decided', async (t) => {
  const p = await runnerProject(t);
  const task = p.task({ mode: 'build', ceiling: 'workspace', decide: () => 'wait' });
  const call = task.ctx.requestApproval('mcp_call', { server: 'config:notes', tool: 'append', arguments: { text: 'hello' } });
  const command = task.ctx.requestApproval('command', { argv: ['npm', 'test'], cwd: p.sb.project });
  await task.when(() => task.approvals.length === 2);
  const mcp = task.approvals[0] as { id: string };
  const cmd = task.approvals[1] as { id: string };
  const listed = await cli(p.sb, ['--project', p.sb.project, 'approvals']);
  t.equal(listed.code, 0);
  t.match(listed.stdout, /^APPROVAL +JOB +OWNER +KIND +ACTION\n/);
  t.match(listed.stdout, new RegExp(`\\n${mcp.id} +job_\\w+ +stdio:\\d+:[0-9a-f]{8} +mcp_call +call config:notes tool append with \\{"text":"hello"\\}\\n`));
  t.match(listed.stdout, new RegExp(`\\n${cmd.id} +job_\\w+ +stdio:\\d+:[0-9a-f]{8} +command +run \\["npm","test"\\] in ${p.sb.project}`));
  const denied = await cli(p.sb, ['--project', p.sb.project, 'approvals', 'deny', mcp.id]);
  t.equal(denied.code, 0, denied.stderr);
  t.match(denied.stdout, new RegExp(`^denied ${mcp.id}: call config:notes tool append with \\{"text":"hello"\\} \\(job job_\\w+ \\w+\\)\\n$`), 'an external call is named, not left blank');
  t.equal(getApproval(p.db, mcp.id)?.state, 'denied');
  const approved = await cli(p.sb, ['--project', p.sb.project, 'approvals', 'approve', cmd.id]);
  t.match(approved.stdout, new RegExp(`^approved ${cmd.id}: run \\["npm","test"\\] in ${p.sb.project} \\(job job_\\w+ \\w+\\)\\n$`));
  t.equal(getApproval(p.db, cmd.id)?.state, 'approved');
  // The task's waits end with it.
  task.controller.abort();
  await Promise.all([call, command]);
});
