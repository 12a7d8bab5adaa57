import t from 'tap';
import { definitionHash, definitionWarnings, normalize, parseText, publicView } from '../../src/catalog/definition.js';
import { shippedPolicy } from '../../src/policy/load.js';

const L = shippedPolicy().limits.definitions;
const load = (text: string) => normalize(parseText(text, 'def', L), 'def', L);

t.test('the same content in YAML and JSON, in any key order, has the same hash', async (t) => {
  const yaml = 'name: my-tools\ncommand: ["/opt/t/bin/server", "--stdio"]\nenv_refs:\n  API_TOKEN: MY_TOOLS_API_KEY\n';
  const json = '{"env_refs":{"API_TOKEN":"MY_TOOLS_API_KEY"},"command":["/opt/t/bin/server","--stdio"],"name":"my-tools","timeout_sec":30,"description":""}';
  t.equal(definitionHash(load(yaml)), definitionHash(load(json)), 'defaults are normalised before hashing');
  t.not(definitionHash(load(yaml)), definitionHash(load(yaml.replace('--stdio', '--other'))));
});

t.test('literal env values are kept out of the public view', async (t) => {
  const n = load('{"name":"x","command":["/bin/x"],"env":{"TOKEN":"literal-secret-value"}}');
  const v = publicView(n);
  t.same(v.env_names, ['TOKEN']);
  t.notMatch(JSON.stringify(v), /literal-secret-value/);
});

t.test('refusals, each with a message that names the problem', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['{"name":"x","command":["/bin/x"],"surprise":1}', /unknown key "surprise" \(known keys: name, command, /],
    ['{"name":"x","url":"https://e.com/mcp","env":{"A":"b"}}', /env and env_refs apply to stdio commands only/],
    ['{"name":"x","url":"https://e.com/mcp","env_refs":{"A":"B"}}', /env and env_refs apply to stdio commands only/],
    ['{"name":"x","url":"https://e.com/mcp","command":["/bin/x"]}', /either command or url/],
    ['{"name":"x","command":["bin/x"]}', /command\[0\] must be an absolute path/],
    ['{"name":"x","command":["/bin/x"],"timeout_sec":0.05}', /timeout_sec: must be >= 0.1/],
    ['{"name":"x","command":["/bin/x"],"timeout_sec":121}', /must be <= 120/],
    ['{"name":"bad name","command":["/bin/x"]}', /\/name: must match pattern/],
    ['{"name":"x","url":"http://example.com/mcp"}', /plain http is only for loopback/],
    ['{"name":"x","url":"http://user:pw@127.0.0.1:9/mcp"}', /must not contain credentials/],
    ['{"name":"x","url":"https://e.com/mcp?key=1"}', /query or a fragment/],
    ['{"name":"x","url":"https://e.com/mcp#frag"}', /query or a fragment/],
    ['{"name":"x","url":"ftp://e.com/mcp"}', /http or https/],
    ['name: x\nname: y\ncommand: ["/bin/x"]\n', /duplicate key "name" at line 2, column 1/],
    ['{"name":"x","name":"y","command":["/bin/x"]}', /duplicate key "name" at line 1, column 13/],
    ['name: !!binary eA==\ncommand: ["/bin/x"]\n', /tags such as tag:yaml.org,2002:binary are not accepted/],
    ['name: !custom x\ncommand: ["/bin/x"]\n', /Unresolved tag|tags/],
    [`a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [${'*a, '.repeat(9)}*a]\nc: [${'*b, '.repeat(9)}*b]\nname: x\ncommand: ["/bin/x"]\n`, /Excessive alias count/],
    [`name: x\ncommand: ["/bin/${'x'.repeat(70000)}"]\n`, /larger than 65536 bytes/],
  ];
  for (const [text, why] of cases) t.throws(() => load(text), { code: 'SC_DEF_INVALID', message: why }, text.slice(0, 60));
});

const loadAs = (text: string, file: string) => normalize(parseText(text, file, L), file, L);

t.test('a .json file is parsed as JSON, strictly, with the line and column of a mistake', async (t) => {
  t.throws(() => loadAs('{"name":"x","command":["/bin/x"],}\n', 'tools.json'), { code: 'SC_DEF_INVALID', message: /^tools\.json: invalid JSON at line 1, column 34: / }, 'a trailing comma is refused');
  t.throws(() => loadAs('{\n  "name": "x"\n  "command": ["/bin/x"]\n}\n', 'tools.json'), { message: /invalid JSON at line 3, column 3/ });
  t.throws(() => loadAs('{"name": "x",', 'tools.json'), { message: /invalid JSON at line 1, column 14: unexpected end of input/ });
  t.throws(() => loadAs('name: x\ncommand: ["/bin/x"]\n', 'tools.JSON'), { message: /invalid JSON at line 1, column 1/ }, 'YAML in a .json file is refused');
  t.equal(loadAs('{"name":"x","command":["/bin/x"],}\n', 'tools.yaml').name, 'x', 'YAML (a superset) still reads it as YAML');
  t.throws(() => loadAs('{\n  "name": "x",\n  "command": ["/bin/x"],\n  "name": "y"\n}\n', 'tools.json'), { message: /duplicate key "name" at line 4, column 3/ });
});

t.test('the JSON scan agrees with JSON.parse on what is valid', async (t) => {
  const { jsonProblem } = await import('../../src/util/json-error.js');
  const valid = ['{}', '[]', ' {"a": [1, -2.5e3, true, false, null, "\\u00e9\\n"]} ', '"x"', '0', '[[[]]]', '{"a":{"b":{}}}'];
  const invalid = ['{,}', '[1,]', '{"a":1,}', '{"a" 1}', "{'a':1}", '[01]', '"\t"', '{"a":1} x', '', '[', '{"a":', '-', '"\\x"', '1.', 'nul'];
  for (const v of valid) t.equal(jsonProblem(v), undefined, v);
  for (const v of invalid) {
    t.throws(() => JSON.parse(v), v);
    t.ok(jsonProblem(v), `scan refuses ${JSON.stringify(v)}`);
  }
  t.equal(jsonProblem(`${'['.repeat(100000)}`)?.message, 'unexpected end of input; expected a value', 'deep nesting does not overflow the stack');
});

t.test('YAML errors name the line and column', async (t) => {
  t.throws(() => loadAs('name: x\ncommand: [\n  "/bin/x"\n', 'tools.yaml'), { code: 'SC_DEF_INVALID', message: /^tools\.yaml: .* at line \d+, column \d+$/ });
  t.throws(() => loadAs('name: x\n  bad: : [\n', 'tools.yml'), { message: /at line 1, column 7$/ });
});

t.test('an unknown key is named, with the known key it was probably meant to be', async (t) => {
  t.throws(() => loadAs('name: x\ncomand: ["/bin/x"]\n', 'tools.yaml'), { code: 'SC_DEF_INVALID', message: 'tools.yaml: unknown key "comand"; did you mean "command"?' });
  t.throws(() => loadAs('{"name":"x","url":"https://e.com/mcp","api_key_evn":"K"}', 'tools.json'), { message: /unknown key "api_key_evn"; did you mean "api_key_env"\?/ });
});

t.test('a ${ in a stdio command is kept literally and warned about', async (t) => {
  const n = loadAs('name: x\ncommand: ["/bin/x", "--token=${TOKEN}"]\n', 'tools.yaml');
  t.same(n.command, ['/bin/x', '--token=${TOKEN}'], 'stored as written');
  t.matchOnly(definitionWarnings(n), [/command\[1\] contains "\$\{", which is passed literally/]);
  t.same(definitionWarnings(loadAs('name: x\ncommand: ["/bin/x"]\n', 'tools.yaml')), []);
});

t.test('http rules: loopback may be plain, others need https (bearer too), others need the network', async (t) => {
  t.match(load('{"name":"x","url":"http://localhost:8080/mcp","api_key_env":"T"}'), { transport: 'http', needs_network: false });
  t.match(load('{"name":"x","url":"http://127.0.0.1:8080/mcp"}'), { needs_network: false });
  t.match(load('{"name":"x","url":"https://tools.example.com/mcp","api_key_env":"T"}'), { needs_network: true, api_key_env: 'T' });
});

t.test("a stdio definition's sandbox key: normalised, part of the hash, absent when it declares nothing", async (t) => {
  const base = 'name: mem\ncommand: ["/usr/bin/node", "/opt/mem/index.js"]\nenv_refs:\n  TOKEN: MEM_TOKEN\n';
  // The hash a definition without the key had before the key existed: grants made then stay valid.
  t.equal(definitionHash(load(base)), '2d7f937f565b145c8d778a0ca4a844af9da8181141003b0171bc52b5c3ad0220');
  t.equal(definitionHash(load(`${base}sandbox: {read: [], write: []}\n`)), definitionHash(load(base)), 'an empty key declares nothing');
  const n = load(`${base}sandbox:\n  read: ["~/models"]\n  write: ["~/.local/share/mem"]\n  network: [API.Example.com., "example.org:8443", api.example.com]\n`);
  t.same(n.sandbox, { read: ['~/models'], write: ['~/.local/share/mem'], network: ['api.example.com', 'example.org:8443'] });
  t.equal(n.needs_network, true);
  t.not(definitionHash(n), definitionHash(load(base)), 'declaring a need changes the hash');
  t.not(definitionHash(n), definitionHash(load(`${base}sandbox:\n  read: ["~/models"]\n  write: ["~/.local/share/mem", "~/more"]\n  network: [api.example.com, "example.org:8443"]\n`)), 'so does each change to it');
  t.same(load(`${base}sandbox: {network: true}\n`).sandbox, { network: true });
  t.match(definitionWarnings(load(`${base}sandbox: {network: true}\n`)), [/whole network.*trust --network/]);
  t.equal(load(base).needs_network, false, 'a stdio server without the key gets no network');
  const refusals: Array<[string, RegExp]> = [
    [`${base}sandbox: {network: ["not a host"]}\n`, /sandbox\.network: "not a host" is not HOST or HOST:PORT/],
    [`${base}sandbox: {read: ["relative/path"]}\n`, /\/sandbox\/read\/0: must match pattern/],
    [`${base}sandbox: {exec: ["/x"]}\n`, /sandbox.*unknown property "exec"/],
    ['{"name":"x","url":"https://e.com/mcp","sandbox":{"network":true}}', /sandbox applies to stdio commands only/],
  ];
  for (const [text, re] of refusals) t.throws(() => load(text), { code: 'SC_DEF_INVALID', message: re }, text);
});
