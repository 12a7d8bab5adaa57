// The scrubber: known secret values become [secret:NAME] wherever they appear,
// in one bounded pass, including split across the chunks of a stream, in hex
// and base64, and for secrets that another process stored and this one never
// revealed. Short values are left alone by design (secrets.scrub_min_chars).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { holdsSecret, ScrubStream, scrub, scrubDeep } from '../../src/policy/scrub.js';
import { loadPolicy, shippedPolicy } from '../../src/policy/load.js';
import { scrubProfileSecrets } from '../../src/store/secrets.js';
import { registerSecretValue } from '../../src/util/secret-values.js';
import { sandbox, spawnCli } from '../fixtures/env.js';

const unique = (tag: string) => `${tag}-${Math.random().toString(36).slice(2, 12)}`;

t.test('a registered value is replaced by its name, every time it occurs', async (t) => {
  const v = unique('alpha-secret');
  registerSecretValue(v, 'ALPHA');
  t.equal(scrub(`one ${v} two ${v}${v}`), 'one [secret:ALPHA] two [secret:ALPHA][secret:ALPHA]');
  t.equal(scrub('nothing here'), 'nothing here');
});

t.test('holdsSecret finds a known value, raw or encoded, anywhere in a text, and nothing in a text without one', async (t) => {
  const v = unique('gamma-secret');
  registerSecretValue(v, 'GAMMA');
  t.ok(holdsSecret(`API_KEY=${v}\n`), 'the raw value');
  t.ok(holdsSecret(`x${Buffer.from(v).toString('hex')}x`), 'its hex form');
  t.ok(holdsSecret(Buffer.from(`{"value":"${v}"}`).toString('base64')), 'inside base64');
  t.notOk(holdsSecret(`API_KEY=${v.slice(0, -1)}`), 'a value cut short is not the value');
  t.notOk(holdsSecret(''), 'an empty text');
});

t.test('values shorter than secrets.scrub_min_chars are not scrubbed, so ordinary words survive', async (t) => {
  const min = shippedPolicy().limits.secrets.scrub_min_chars;
  t.equal(min, 8);
  registerSecretValue('true', 'FLAG');
  registerSecretValue('q7Zx!', 'SHORT');
  t.equal(scrub('it is true: q7Zx!'), 'it is true: q7Zx!');
});

t.test('overlapping secrets leave no piece of either behind', async (t) => {
  const a = `${unique('ovl')}XYZW`;
  const b = `XYZW${unique('tail')}`;
  registerSecretValue(a, 'A');
  registerSecretValue(b, 'B');
  const joined = `${a.slice(0, -4)}${b}`;
  const out = scrub(`[${joined}]`);
  t.equal(out, '[[secret:A+B]]');
});

t.test('hex and base64 forms of a value are caught at any alignment', async (t) => {
  const v = unique('encoded-value');
  registerSecretValue(v, 'ENC');
  t.match(scrub(Buffer.from(v).toString('hex')), /^\[secret:ENC:encoded\]$/);
  t.match(scrub(Buffer.from(v).toString('hex').toUpperCase()), /^\[secret:ENC:encoded\]$/);
  for (const prefix of ['', 'x', 'xy', '{"value":"']) {
    const b64 = Buffer.from(`${prefix}${v} and more`).toString('base64');
    const out = scrub(b64);
    t.match(out, /\[secret:ENC:encoded\]/, `base64 after ${JSON.stringify(prefix)}`);
    t.ok(out.length < b64.length, 'the encoded value is gone');
  }
});

t.test('a stream scrubber catches a value split across chunks and holds back only what could still be one', async (t) => {
  const v = unique('streamed-secret');
  registerSecretValue(v, 'STREAM');
  const s = new ScrubStream();
  const cut = 9;
  const first = s.push(`line one\nvalue: ${v.slice(0, cut)}`);
  t.equal(first, 'line one\nvalue: ', 'the start of the value is held back, not sent');
  const second = s.push(`${v.slice(cut)} done\n`);
  t.equal(second, '[secret:STREAM] done\n');
  t.equal(s.push('plain text\n'), 'plain text\n', 'ordinary text goes straight through');
  t.equal(s.push(v.slice(0, 4)), '');
  t.equal(s.end(), v.slice(0, 4), 'at the end a held prefix that never became a secret is released');
});

t.test('a text past secrets.scrub_max_chars is cut there, never passed on unscrubbed', async (t) => {
  // The bound is policy data: a policy whose limits.json sets the least bound its schema allows
  // shows the cut with a 64 Ki-character text rather than the shipped 16 Mi.
  const dir = mkdtempSync(join(tmpdir(), 'sc-scrub-policy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(shippedPolicy().dir, dir, { recursive: true });
  const limits = JSON.parse(readFileSync(join(dir, 'limits.json'), 'utf8'));
  limits.secrets.scrub_max_chars = 65536;
  writeFileSync(join(dir, 'limits.json'), JSON.stringify(limits));
  const secrets = loadPolicy(dir).limits.secrets;
  const max = secrets.scrub_max_chars;
  t.equal(max, 65536, 'a schema-valid policy');
  const v = unique('zq-straddle');
  registerSecretValue(v, 'STRADDLE');
  const big = `${'a'.repeat(max - 5)}${v}${'b'.repeat(100)}`;
  const out = scrub(big, secrets);
  t.notMatch(out, v.slice(0, 5), 'not even the start of the value that straddles the bound');
  t.match(out, /…\[\d+ more characters withheld: past the scrubber's bound \(secrets\.scrub_max_chars\)\]$/);
  t.ok(out.length <= max + 120);
  // Without a policy given, the shipped bound applies: the same text is within it, scrubbed whole.
  t.ok(shippedPolicy().limits.secrets.scrub_max_chars > big.length);
  t.equal(scrub(big), `${'a'.repeat(max - 5)}[secret:STRADDLE]${'b'.repeat(100)}`);
});

t.test('scrubDeep walks strings and keys, and leaves other values alone', async (t) => {
  const v = unique('deep-secret');
  registerSecretValue(v, 'DEEP');
  t.same(scrubDeep({ [v]: [v, 1, true, null, { inner: `x${v}x` }] }), { '[secret:DEEP]': ['[secret:DEEP]', 1, true, null, { inner: 'x[secret:DEEP]x' }] });
});

t.test('scrubDeep keeps every field and element around a secret, in order, and leaves the input untouched', async (t) => {
  const v = unique('late-secret');
  registerSecretValue(v, 'LATE');
  const input = { a: 'plain', b: [1, 'two', { c: 'three' }, `in ${v}`, 'after'], [v]: 'key', z: { y: 'last' } };
  const before = JSON.stringify(input);
  const out = scrubDeep(input);
  t.same(out, { a: 'plain', b: [1, 'two', { c: 'three' }, 'in [secret:LATE]', 'after'], '[secret:LATE]': 'key', z: { y: 'last' } });
  t.same(Object.keys(out), ['a', 'b', '[secret:LATE]', 'z'], 'keys keep their order');
  t.equal(JSON.stringify(input), before, 'the value given is not changed');
  t.same(scrubDeep({ deep: [{ deeper: ['nothing secret here at all'] }] }), { deep: [{ deeper: ['nothing secret here at all'] }] });
});

t.test('a value exactly secrets.scrub_min_chars long is caught, alone and inside a longer text', async (t) => {
  const min = shippedPolicy().limits.secrets.scrub_min_chars;
  const v = Math.random().toString(36).slice(2).padEnd(min, 'q').slice(0, min);
  t.equal(v.length, min);
  registerSecretValue(v, 'EXACT');
  t.equal(scrub(v), '[secret:EXACT]');
  t.equal(scrubDeep({ k: v }).k, '[secret:EXACT]');
  t.equal(scrub(`<${v}>`), '<[secret:EXACT]>');
  t.equal(scrub(v.slice(1)), v.slice(1), 'one character short is not the secret');
});

t.test('a secret stored by another process is scrubbed here without ever being revealed', async (t) => {
  const sb = sandbox('scrub');
  scrubProfileSecrets(sb.profile);
  const v = unique('stored-elsewhere');
  t.equal(scrub(`x ${v} x`), `x ${v} x`, 'unknown before it is stored');
  const set = await spawnCli(sb, ['secret', 'set', 'ELSEWHERE'], `${v}\n`);
  t.equal(set.code, 0, set.stderr);
  t.equal(scrub(`x ${v} x`), 'x [secret:ELSEWHERE] x', 'known as soon as the store holds it');
  const removed = await spawnCli(sb, ['secret', 'remove', 'ELSEWHERE']);
  t.equal(removed.code, 0, removed.stderr);
});
