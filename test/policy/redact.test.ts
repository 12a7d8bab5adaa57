// Redaction by key name: credentials are masked whole, usage counts are not.
import t from 'tap';
import { REDACTED, redact, registerSecretValue } from '../../src/policy/redact.js';

t.test('keeps every token count a model reports as a number', async (t) => {
  const usage = {
    input_tokens: 1200, output_tokens: 34, total_tokens: 1234, prompt_tokens: 1200, completion_tokens: 34,
    cache_creation_input_tokens: 7, cache_read_input_tokens: 900, reasoning_tokens: 12, estimated_tokens: 4000, max_tokens: 8192, inputTokens: 5,
    prompt_tokens_details: { cached_tokens: 900, audio_tokens: 0 },
  };
  t.same(redact({ usage }, 2048), { usage });
});

t.test('still masks every credential-looking key, whatever its value', async (t) => {
  const secrets = {
    token: 'abc', access_token: 'abc', refresh_token: 'abc', id_token: 'abc', api_key: 'abc', apiKey: 'abc', 'x-api-key': 'abc',
    secret: 'abc', client_secret: 'abc', password: 'abc', passwd: 'abc', passphrase: 'abc', authorization: 'Bearer abc', cookie: 'a=b', credentials: { user: 'u' },
    // a number is masked too when its key is not a count: a numeric PIN or token is still a secret
    token_number: 123456, pin_token: 42, tokens: ['t1', 't2'], session_tokens: 'abc', total_tokens: 'abc',
  };
  const out = redact(secrets, 2048) as Record<string, unknown>;
  for (const k of Object.keys(secrets)) t.equal(out[k], REDACTED, `${k} is masked`);
});

t.test('a details object of counts is walked: its counts show, a credential in it is masked', async (t) => {
  t.same(redact({ prompt_tokens_details: { cached_tokens: 3, access_token: 'abc' } }, 2048), { prompt_tokens_details: { cached_tokens: 3, access_token: REDACTED } });
});

t.test('a known secret value is masked wherever it appears, counts or not', async (t) => {
  registerSecretValue('sk-redact-canary-0123456789', 'CANARY_KEY');
  // A known value is scrubbed to its name's marker (policy/scrub.ts); the count beside it stays a number.
  t.same(redact({ note: 'key sk-redact-canary-0123456789 here', input_tokens: 3 }, 2048), { note: 'key [secret:CANARY_KEY] here', input_tokens: 3 });
});
