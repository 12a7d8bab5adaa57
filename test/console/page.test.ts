// The console in a real browser (headless Chromium through playwright-core), against a real
// in-process engine and the scripted fake model: a task appears and streams its steps, its
// approvals show exactly what the record holds and act on that one id, review and rollback
// restore the files, a changed catalog is accepted, and the audit view verifies. Hostile
// text from the model, a command, a file name and a tool description stays text.
// One browser for the file; a fresh context (its own cookie) for each subtest.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page, type Route } from 'playwright-core';
import t, { type Test } from 'tap';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { startConsole, type TestConsole } from '../fixtures/console.js';
import { cli, connection, sandbox } from '../fixtures/env.js';
import { startFakeModel, type Step } from '../fixtures/fake-model.js';
import { grant, peerDef, world } from '../fixtures/mcp-client.js';
import { ALL, ALL_SHOWN, assertInert, FORGED_FILE, FORGED_FILE_SHOWN, MAKEFILE_LINE } from '../fixtures/hostile-text.js';

const CHROMIUM = '/usr/bin/chromium';
const HOSTILE = '<script>alert("s")</script><img src=x onerror=alert("i")></textarea>';
const HOSTILE_FILE = '<script>x<img src=x onerror=alert(1)>.txt';

let browser: Browser;
t.before(async () => {
  // No skip: without Chromium this file fails.
  t.ok(existsSync(CHROMIUM), `Chromium is installed at ${CHROMIUM}`);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
});
t.teardown(() => browser?.close());

/** A signed-in page on the console, recording anything that would mean text ran as code. */
async function openPage(t: Test, c: TestConsole): Promise<{ page: Page; ran: string[] }> {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  // The suite runs files side by side on few cores: a task's next step may take a while, never a fixed sleep.
  context.setDefaultTimeout(90000);
  const page = await context.newPage();
  const ran: string[] = [];
  page.on('dialog', (d) => {
    ran.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => ran.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') ran.push(`console error: ${m.text()} ${m.location().url}`);
  });
  await page.goto(c.h.url);
  t.equal(new URL(page.url()).search, '', 'the code left the address bar');
  await page.getByTestId('live').getByText('live').waitFor();
  return { page, ran };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const step = (...calls: ReturnType<typeof call>[]): Step => ({ tool_calls: calls, finish: 'tool_calls' });

t.test('a task streams live; approvals show exactly and act; review and rollback restore; hostile text stays text', async (t) => {
  const sb = sandbox('console-page');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  writeFileSync(join(sb.project, 'package.json'), '{"name":"app"}\n');
  const argv = ['sh', '-c', `printf '%s\\n' '${HOSTILE}'`];
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      step(call('w1', 'write_file', { path: 'hello.txt', content: 'hello\n' }), call('w2', 'write_file', { path: HOSTILE_FILE, content: `${HOSTILE}\n` })),
      step(call('w3', 'write_file', { path: 'package.json', content: '{"name":"app","scripts":{"test":"node t.js"}}\n' })),
      step(call('c1', 'run_command', { argv })),
      step(call('f1', 'finish', { summary: `done ${HOSTILE}` })),
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  const conn = await connection(sb, { allowWrite: true });
  t.teardown(() => conn.close());

  const run = await conn.call('shadow_run', { prompt: 'change things', mode: 'build', permission_level: 'workspace' });
  t.notOk(run.isError, run.text);
  const jobId = run.data.job_id as string;
  const row = page.locator(`[data-testid="job"][data-id="${jobId}"]`);
  await row.waitFor();
  t.pass('the task appeared without a reload');
  await row.click();

  // A protected write asks on its own, with its complete diff.
  const write = page.locator('[data-testid="approval"]', { hasText: 'write approval' });
  await write.waitFor();
  t.match(await write.innerText(), /package\.json/);
  t.match(await write.locator('pre.diff').innerText(), /\+\{"name":"app","scripts":\{"test":"node t\.js"\}\}/, "the write's diff shows");
  await write.getByTestId('approve').click();

  // The command: argv, directory and the files the task changed so far, exactly.
  const cmd = page.locator('[data-testid="approval"]', { hasText: 'command approval' });
  await cmd.waitFor();
  t.equal(await cmd.getByTestId('approval-argv').innerText(), JSON.stringify(argv));
  t.equal(await cmd.getByTestId('approval-cwd').innerText(), sb.project);
  const files = await cmd.getByTestId('approval-files').locator('li').allInnerTexts();
  t.same([...files].sort(), [HOSTILE_FILE, 'hello.txt', 'package.json'].sort(), 'the changed files, the hostile name as text');
  await cmd.getByTestId('approve').click();

  const answer = page.getByTestId('answer');
  await answer.waitFor();
  t.match(await answer.innerText(), `done ${HOSTILE}`, "the model's answer shows as text");
  const output = page.locator('[data-testid="step"][data-kind="tool_result"]', { hasText: 'run_command' });
  t.match(await output.innerText(), HOSTILE, "the command's output shows as text");
  t.ok((await page.locator('[data-testid="step"]').count()) >= 6, 'the steps streamed in');
  t.equal(await page.getByTestId('detail-state').innerText(), 'succeeded');
  t.equal(await page.getByTestId('detail-mode').innerText(), 'mode build · model fake', 'the mode and model of the task');
  t.equal(readFileSync(join(sb.project, 'package.json'), 'utf8'), '{"name":"app","scripts":{"test":"node t.js"}}\n', 'the approved write happened');

  await page.getByTestId('review-open').click();
  await page.getByTestId('review-file').first().waitFor();
  t.same((await page.getByTestId('review-path').allInnerTexts()).sort(), [HOSTILE_FILE, 'hello.txt', 'package.json'].sort(), 'review lists every file');
  const hello = page.getByTestId('review-file').filter({ hasText: 'hello.txt' });
  t.match(await hello.locator('pre.diff').innerText(), /\+hello/);
  await hello.getByTestId('why').click();
  t.match(await hello.getByTestId('why-out').innerText(), jobId, 'why names the task');
  await page.getByTestId('rollback').click();
  await page.getByTestId('rollback-confirm').click();
  await page.getByTestId('rolled-back').waitFor();
  t.notOk(existsSync(join(sb.project, 'hello.txt')), 'rollback removed the new file');
  t.notOk(existsSync(join(sb.project, HOSTILE_FILE)));
  t.equal(readFileSync(join(sb.project, 'package.json'), 'utf8'), '{"name":"app"}\n', 'and restored the changed one');

  t.same(ran, [], 'no dialog, page error or console error: nothing ran');
  t.equal(await page.locator('img').count(), 0, 'no element was made from text');
  t.equal(await page.locator('script').count(), 1, 'only the page script');
});

t.test("approvals show issue 41's forgeries and every control, bidi and invisible character as visible escapes", async (t) => {
  const sb = sandbox('console-inert');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  writeFileSync(join(sb.project, 'Makefile'), 'all:\n\t@echo building\n');
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      step(call('w1', 'write_file', { path: FORGED_FILE, content: 'ok\n' }), call('w2', 'write_file', { path: `n${ALL}.txt`, content: 'x\n' })),
      step(call('m1', 'write_file', { path: 'Makefile', content: `all:\n${MAKEFILE_LINE}\n` })),
      step(call('c1', 'run_command', { argv: ['echo', `w${ALL}`] })),
      step(call('f1', 'finish', { summary: `done ${ALL}` })),
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  const conn = await connection(sb, { allowWrite: true });
  t.teardown(() => conn.close());
  const run = await conn.call('shadow_run', { prompt: 'build it', mode: 'build', permission_level: 'workspace' });
  const jobId = run.data.job_id as string;

  const write = page.locator('[data-testid="approval"]', { hasText: 'write approval' });
  await write.waitFor();
  const diff = await write.locator('pre.diff').innerText();
  t.ok(diff.includes('+\t@touch "$$HOME/PWNED" #\\r\\x1b[2K    +\t@echo building'), 'the Makefile line shows the touch and the forged rest');
  t.ok((await write.locator('pre.diff .esc').count()) >= 2, 'each escape is marked apart');
  assertInert(t, (await write.textContent()) ?? '', 'the write approval');
  await write.getByTestId('approve').click();

  const cmd = page.locator('[data-testid="approval"]', { hasText: 'command approval' });
  await cmd.waitFor();
  const files = await cmd.getByTestId('approval-files').locator('li').allTextContents();
  t.ok(files.includes(FORGED_FILE_SHOWN), "issue 41's file name, escaped, one item");
  t.ok(files.includes(`n${ALL_SHOWN}.txt`), 'a name with every class, each escaped');
  t.ok((await cmd.getByTestId('approval-argv').innerText()).includes('\\u{202e}'), "the argv word's bidi override is shown");
  assertInert(t, (await cmd.textContent()) ?? '', 'the command approval');
  await cmd.getByTestId('deny').click();

  await page.locator(`[data-testid="job"][data-id="${jobId}"]`).click();
  const answer = page.getByTestId('answer');
  await answer.waitFor();
  t.ok((await answer.innerText()).includes(`done ${ALL_SHOWN}`), "the model's answer, escaped");
  assertInert(t, await page.evaluate(() => document.body.textContent ?? ''), 'the whole page');
  t.same(ran, [], 'nothing ran');
});

t.test('deny: the command never runs', async (t) => {
  const sb = sandbox('console-deny');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const fake = await startFakeModel({ format: 'openai', script: [step(call('c1', 'run_command', { argv: ['sh', '-c', 'echo ran > never.txt'] })), step(call('f1', 'finish', { summary: 'stopped' }))] });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  const conn = await connection(sb, { allowWrite: true });
  t.teardown(() => conn.close());
  const run = await conn.call('shadow_run', { prompt: 'try', mode: 'build', permission_level: 'workspace' });
  const card = page.locator(`[data-testid="approval"][data-job="${run.data.job_id}"]`);
  await card.waitFor();
  await card.getByTestId('deny').click();
  await card.waitFor({ state: 'detached' });
  const state = page.locator(`[data-testid="job"][data-id="${run.data.job_id}"] [data-testid="job-state"]`);
  await t.resolves(state.filter({ hasText: /^(succeeded|failed|cancelled)$/ }).waitFor(), 'the task ended');
  t.notOk(existsSync(join(sb.project, 'never.txt')), 'the denied command did not run');
  t.same(ran, []);
});

t.test('steps that stream in while a task is being opened are all shown, with the recorded ones before them', async (t) => {
  const sb = sandbox('console-follow');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const fake = await startFakeModel({ format: 'openai', script: [step(call('c1', 'run_command', { argv: ['sh', '-c', 'echo followed'] })), step(call('f1', 'finish', { summary: 'all seen' }))] });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  const conn = await connection(sb, { allowWrite: true });
  t.teardown(() => conn.close());
  const run = await conn.call('shadow_run', { prompt: 'go', mode: 'build', permission_level: 'workspace' });
  const id = run.data.job_id as string;
  const card = page.locator(`[data-testid="approval"][data-job="${id}"]`);
  await card.waitFor();

  // Hold the read of the recorded steps until the task has gone on and its new steps have streamed in.
  let held!: (r: Route) => void;
  const read = new Promise<Route>((resolve) => (held = resolve));
  await page.route('**/api/job?*', (route) => held(route));
  await page.locator(`[data-testid="job"][data-id="${id}"]`).click();
  const route = await read;
  await card.getByTestId('approve').click();
  await page.locator(`[data-testid="job"][data-id="${id}"] [data-testid="job-state"]`).filter({ hasText: /^succeeded$/ }).waitFor();
  await route.continue();
  await page.unroute('**/api/job?*');

  await page.getByTestId('answer').waitFor();
  const recorded = await page.evaluate(async (u) => (await (await fetch(u)).json()).events.map((e: { seq: number }) => e.seq), `api/job?project=${encodeURIComponent(sb.project)}&id=${id}`);
  // Steps recorded after the answer may still be on their way; missing ones never come.
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="step"]').length >= n, recorded.length, { timeout: 20000 }).catch(() => {});
  const shown = (await page.locator('[data-testid="step"] .kind').allInnerTexts()).map((k) => Number(k.split(' ')[0]));
  t.same(shown, recorded, 'every recorded step shows once, in order');
  t.match(await page.locator('[data-testid="step"][data-kind="tool_result"]', { hasText: 'run_command' }).innerText(), /followed/, 'including the result that streamed in meanwhile');
  t.same(ran, []);
});

t.test("a coding CLI's changed settings show as a warning in the task's steps, as text", async (t) => {
  const sb = sandbox('console-state');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const { openDb } = await import('../../src/store/db.js');
  const { addEvent, now } = await import('../../src/engine/job-events.js');
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const id = 'job_state00000000000000000';
  db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES (?, ?, 'agent', 'test', 'workspace', 'succeeded', 'a runner task', ?, ?)").run(id, sb.project, now(), now());
  const path = `/home/u/.claude/${HOSTILE}`;
  addEvent(db, id, 'runner.state_changed', { changed: [{ path, was: 'missing', now: 'file' }], notice: `While this task ran, ${path} changed (by the task or by anything else on this machine). These configure what claude runs outside any sandbox when you start it yourself: check them before you do.` });
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  await page.locator(`[data-testid="job"][data-id="${id}"]`).click();
  const warning = page.locator('[data-testid="step"][data-kind="runner.state_changed"]');
  await warning.waitFor();
  t.match(await warning.innerText(), `WARNING: While this task ran, ${path} changed`, 'its notice, in words, with the path as written');
  t.same(ran, [], 'nothing in it ran');
});

t.test('cancel: a task waiting for an approval is cancelled from its detail, and its command never runs', async (t) => {
  const sb = sandbox('console-cancel');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const fake = await startFakeModel({ format: 'openai', script: [step(call('c1', 'run_command', { argv: ['sh', '-c', 'echo ran > never.txt'] })), step(call('f1', 'finish', { summary: 'stopped' }))] });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  // The task runs in this connection's own engine, not the console's: the cancel reaches it through the store.
  const conn = await connection(sb, { allowWrite: true });
  t.teardown(() => conn.close());
  const run = await conn.call('shadow_run', { prompt: 'try', mode: 'build', permission_level: 'workspace' });
  const card = page.locator(`[data-testid="approval"][data-job="${run.data.job_id}"]`);
  await card.waitFor();
  await page.locator(`[data-testid="job"][data-id="${run.data.job_id}"]`).click();
  await page.getByTestId('cancel').click();
  await page.getByTestId('detail-state').filter({ hasText: /^cancelled$/ }).waitFor();
  await card.waitFor({ state: 'detached' });
  t.pass('the task is cancelled and its approval is gone from the page');
  t.equal(await page.getByTestId('cancel').count(), 0, 'an ended task offers no Cancel');
  t.notOk(existsSync(join(sb.project, 'never.txt')), 'the command it asked for never ran');
  t.same(ran, []);
});

t.test('a changed catalog shows its diff and is accepted; a call to it shows server, tool and arguments; its texts stay text', async (t) => {
  const w = await world();
  const file = join(w.sb.root, 'catalog.json');
  const echo = { name: 'echo', description: `echoes ${HOSTILE}`, inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
  writeFileSync(file, JSON.stringify([echo]));
  const g = await grant(w, 'shifty', peerDef('catalog-file', {}, [file]));
  writeFileSync(file, JSON.stringify([echo, { name: 'wipe', description: `wipes ${HOSTILE}`, inputSchema: { type: 'object', properties: {}, required: [] } }]));
  const refresh = await cli(w.sb, ['--project', w.sb.project, 'mcp', 'tools', g.id, '--refresh']);
  t.match(refresh.stdout, /differs from the pin/, refresh.stderr);
  const c = await startConsole(w.sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  await page.locator('nav button[data-tab="catalogs"]').click();
  const pin = page.locator(`[data-testid="pin"][data-id="${g.id}"]`);
  await pin.waitFor();
  t.equal(await pin.getByTestId('tool-description').first().innerText(), `echoes ${HOSTILE}`, "a server's description shows as text");
  t.match(await pin.getByTestId('catalog-diff').innerText(), /\+ wipe \(new tool\)/);
  await pin.getByTestId('catalog-accept').click();
  await page.locator(`[data-testid="pin"][data-id="${g.id}"] [data-testid="catalog-match"]`).waitFor();
  const json = JSON.parse((await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp', 'tools', g.id])).stdout);
  t.equal(json.last_match, true, 'the seen catalog is now the pin');

  // A task may now call the server: its call waits for an approval that names server, tool and arguments.
  const fake = await startFakeModel({ format: 'openai', script: [step(call('m1', 'mcp__shifty__echo', { text: HOSTILE })), step(call('f1', 'finish', { summary: 'called' }))] });
  t.teardown(() => fake.close());
  useFakeModel(w.sb, 'openai', fake.url);
  const conn = await connection(w.sb, { allowWrite: true });
  t.teardown(() => conn.close());
  const run = await conn.call('shadow_run', { prompt: 'echo', mode: 'build', permission_level: 'workspace' });
  t.notOk(run.isError, run.text);
  await page.locator('nav button[data-tab="tasks"]').click();
  const card = page.locator('[data-testid="approval"]', { hasText: 'mcp_call approval' });
  await card.waitFor();
  const shown = await card.locator('dd').allInnerTexts();
  t.equal(shown[0], g.id, 'the server');
  t.equal(shown[1], 'echo', 'the tool');
  t.same(JSON.parse(shown[2] as string), { text: HOSTILE }, 'the complete arguments, as text');
  await card.getByTestId('approve').click();
  await page.locator(`[data-testid="job"][data-id="${run.data.job_id}"]`).click();
  const result = page.locator('[data-testid="step"][data-kind="tool_result"]', { hasText: 'mcp__shifty__echo' });
  await result.waitFor();
  // The result is the server's MCP content, JSON-encoded, shown as its text.
  t.match(await result.innerText(), JSON.stringify(`echo: ${HOSTILE}`).slice(1, -1), "the server's answer shows as text");
  t.same(ran, []);
  t.equal(await page.locator('img').count(), 0);
});

t.test('the audit view pages the log, filters by kind and shows the verification', async (t) => {
  const sb = sandbox('console-audit');
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const { page, ran } = await openPage(t, c);
  await page.locator('nav button[data-tab="audit"]').click();
  await page.getByTestId('audit-verify').getByText(/audit chain intact/).waitFor();
  t.ok((await page.getByTestId('audit-row').count()) > 0, 'rows are listed');
  await page.getByTestId('audit-kind').fill('decision');
  await page.getByTestId('audit-load').click();
  await page.getByTestId('audit-row').first().waitFor();
  const kinds = await page.locator('[data-testid="audit-row"] td:nth-child(3)').allInnerTexts();
  t.ok(kinds.length > 0 && kinds.every((k) => k === 'decision'), `filtered to decisions (${kinds.length})`);
  t.same(ran, []);
});
