// The one renderer of untrusted text: each class of control, bidi and invisible character is shown
// as a visible escape; a block keeps its lines; JSON stays the same JSON.
import t from 'tap';
import { inert, inertBlock, inertJson, inertParts } from '../../src/util/inert-text.js';
import { ALL, ALL_SHOWN, assertInert, CLASSES, FORGED_FILE, FORGED_FILE_SHOWN, LONE_SURROGATE, MAKEFILE_LINE } from '../fixtures/hostile-text.js';

t.test('each class of character is shown as its escape, in one line and in a block', async (t) => {
  for (const c of [...CLASSES, LONE_SURROGATE]) {
    t.equal(inert(`a${c.char}b`), `a${c.shown}b`, `${c.name} in one line`);
    t.equal(inertBlock(`a${c.char}b\nc`), `a${c.shown}b\nc`, `${c.name} in a block`);
  }
  t.equal(inert(ALL), ALL_SHOWN, 'all of them together, each in its place');
  assertInert(t, inert(`${ALL}${LONE_SURROGATE.char}`), 'one line');
});

t.test('one line has no line break or tab; a block keeps its newlines and tabs and nothing else', async (t) => {
  t.equal(inert('a\nb\tc'), 'a\\nb\\tc', 'a file name or an argv word stays on its line');
  t.equal(inertBlock('a\nb\tc\r\n'), 'a\nb\tc\\r\n', 'a diff keeps its lines and tabs; a CR is shown, also before a newline');
  t.equal(inertBlock('x\u000b\u000cy'), 'x\\x0b\\x0cy', 'vertical tab and form feed are not line breaks a block keeps');
});

t.test("issue 41's forgeries read as what they are", async (t) => {
  t.equal(inertBlock(`+${MAKEFILE_LINE}`), '+\t@touch "$$HOME/PWNED" #\\r\\x1b[2K    +\t@echo building', 'the Makefile line shows the touch and the forged rest');
  t.equal(inert(FORGED_FILE), FORGED_FILE_SHOWN, 'the file name cannot end the list early or hide what follows');
});

t.test('plain text, other scripts and emoji are left as they are', async (t) => {
  const plain = 'src/ünïcode/日本語.ts — "quotes" \\x1b stays a backslash; שלום مرحبا 👍🏽 ❤️ ✌︎';
  t.equal(inert(plain), plain, 'letters of any script, a literal backslash, an emoji and its presentation selector');
  t.equal(inert('package.json\ufe0f'), 'package.json\\u{fe0f}', 'a presentation selector after plain ASCII hides a difference: shown');
  t.equal(inert('a\u{e0100}b\ufe00c'), 'a\\u{e0100}b\\u{fe00}c', 'other variation selectors are shown');
  t.equal(inert('a\u3164b\u115fc'), 'a\\u{3164}b\\u{115f}c', 'Hangul fillers, invisible letters, are shown');
});

t.test('JSON keeps its values and its validity, with no raw character left', async (t) => {
  const value = { name: `x${ALL}${LONE_SURROGATE.char}`, list: [FORGED_FILE, MAKEFILE_LINE], n: 1 };
  for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
    const out = inertJson(text);
    assertInert(t, out, 'the JSON text');
    t.same(JSON.parse(out), JSON.parse(text), 'parses to exactly the same values');
  }
  t.equal(inertJson('"\u202e\u{e0041}\u009b"'), '"\\u202e\\udb40\\udc41\\u009b"', "JSON's own escapes, a pair for a character beyond the BMP");
});

t.test('the parts of a text mark its escapes apart', async (t) => {
  t.same(inertParts('a\u001bb\nc\u202e', true), [
    { text: 'a', escape: false },
    { text: '\\x1b', escape: true },
    { text: 'b\nc', escape: false },
    { text: '\\u{202e}', escape: true },
  ]);
  t.same(inertParts('a\nb', false), [{ text: 'a', escape: false }, { text: '\\n', escape: true }, { text: 'b', escape: false }]);
  t.same(inertParts('', false), []);
  t.equal(inertParts(ALL, false).map((p) => p.text).join(''), inert(ALL), 'the same text as inert()');
});
