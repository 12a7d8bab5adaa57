// Takes docs/console.png: the console following a task that waits for a command approval.
// A real scene, not a mock-up: a trusted project, the scripted fake model, an in-process
// engine running the task, the console, and headless Chromium.
//
//   npm run build && node scripts/screenshot-console.mjs
//
// The test fixtures are TypeScript: their loader hooks are registered first, then imported.
import { register } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

register('../test/fixtures/ts-hooks.mjs', import.meta.url);
const root = fileURLToPath(new URL('..', import.meta.url));
const { cli, connection, sandbox } = await import('../test/fixtures/env.ts');
const { useFakeModel } = await import('../test/fixtures/agent-e2e.ts');
const { startFakeModel } = await import('../test/fixtures/fake-model.ts');
const { startConsole } = await import('../test/fixtures/console.ts');
const { chromium } = await import('playwright-core');

const sb = sandbox('console-shot');
await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
writeFileSync(join(sb.project, 'greet.js'), "export const greet = (name) => 'Hello ' + name;\n");
const call = (id, name, args) => ({ id, name, arguments: JSON.stringify(args) });
const fake = await startFakeModel({
  format: 'openai',
  script: [
    { text: 'I will add a test for greet and run it.', tool_calls: [call('w1', 'write_file', { path: 'greet.test.js', content: "import { greet } from './greet.js';\nif (greet('Ada') !== 'Hello Ada') throw new Error('greet');\nconsole.log('ok');\n" })], finish: 'tool_calls', usage: { input_tokens: 812, output_tokens: 64 } },
    { tool_calls: [call('c1', 'run_command', { argv: ['node', 'greet.test.js'] })], finish: 'tool_calls', usage: { input_tokens: 901, output_tokens: 22 } },
  ],
});
useFakeModel(sb, 'openai', fake.url);
const c = await startConsole(sb);
const conn = await connection(sb, { allowWrite: true });
const run = await conn.call('shadow_run', { prompt: 'add a test for greet and run it', mode: 'build', permission_level: 'workspace' });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await page.goto(c.h.url);
  await page.getByTestId('live').getByText('live').waitFor();
  await page.locator(`[data-testid="job"][data-id="${run.data.job_id}"]`).click();
  await page.locator('[data-testid="approval"]', { hasText: 'command approval' }).waitFor();
  await page.locator('[data-testid="step"][data-kind="tool_result"]').first().waitFor();
  const out = join(root, 'docs', 'console.png');
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await c.close();
  await conn.close();
  await fake.close();
}
process.exit(0);
