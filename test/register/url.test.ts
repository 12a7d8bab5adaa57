import t from 'tap';
import { checkGatewayUrl } from '../../src/register/url.js';

t.test('accepts the loopback /mcp endpoint with an explicit port', async (t) => {
  t.equal(checkGatewayUrl('http://127.0.0.1:8765/mcp'), 'http://127.0.0.1:8765/mcp');
  t.equal(checkGatewayUrl('http://localhost:80/mcp'), 'http://localhost:80/mcp', 'an explicit default port is kept');
  t.equal(checkGatewayUrl('http://[::1]:9/mcp'), 'http://[::1]:9/mcp');
  t.equal(checkGatewayUrl('http://127.9.9.9:1/mcp'), 'http://127.9.9.9:1/mcp');
});

t.test('refuses everything else, saying what is wrong', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['https://127.0.0.1:8765/mcp', /must use http:\/\//],
    ['http://127.0.0.1/mcp', /explicit port/],
    ['http://127.0.0.1:8765/', /path \/mcp exactly/],
    ['http://127.0.0.1:8765/mcp/', /path \/mcp exactly/],
    ['http://127.0.0.1:8765', /path \/mcp exactly/],
    ['http://127.0.0.1:8765/mcp?token=x', /query or a fragment/],
    ['http://127.0.0.1:8765/mcp#x', /query or a fragment/],
    ['http://user:pw@127.0.0.1:8765/mcp', /credentials/],
    ['http://192.168.1.5:8765/mcp', /loopback address or localhost, not 192.168.1.5/],
    ['http://0.0.0.0:8765/mcp', /loopback/],
    ['http://[::]:8765/mcp', /loopback/],
    ['http://example.com:8765/mcp', /loopback/],
    ['http://localhost.example.com:8765/mcp', /loopback/],
    ['http://127.0.0.1:99999/mcp', /port outside/],
    ['http://127.0.0.1:0/mcp', /port outside/],
    ['ftp://127.0.0.1:21/mcp', /must use http/],
  ];
  for (const [url, why] of cases) t.throws(() => checkGatewayUrl(url), { code: 'SC_REGISTER_URL_INVALID', message: why }, url);
});
