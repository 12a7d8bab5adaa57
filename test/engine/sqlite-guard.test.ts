// The SQL guard decides on tokens, the way SQLite reads them: quoting a pragma
// name, hiding it behind a comment or a schema prefix changes nothing (issue 11).
import t from 'tap';
import { refusalOf, tokenize } from '../../src/engine/sqlite-guard.js';

t.test('quoted, bracketed and commented pragma names are normalised before the allow-list', async (t) => {
  const refused = [
    'PRAGMA "locking_mode"=EXCLUSIVE',
    'PRAGMA "mmap_size"=268435456',
    'PRAGMA "hard_heap_limit"=1',
    'PRAGMA "secure_delete"=1',
    'PRAGMA "integrity_check"',
    'PRAGMA "optimize"',
    'PRAGMA [locking_mode] = EXCLUSIVE',
    'PRAGMA `mmap_size` = 1',
    "PRAGMA 'secure_delete' = 1",
    'PRAGMA main."locking_mode"=EXCLUSIVE',
    'PRAGMA "main"."mmap_size"(268435456)',
    'PRAGMA/**/"hard_heap_limit"/**/=1',
    'pragma\n-- note\n"Optimize"',
    'EXPLAIN PRAGMA "integrity_check"',
    'PRAGMA "user_version" = 7',
    'PRAGMA user_version(7)',
    'PRAGMA "page_size"(65536)',
    'PRAGMA journal_mode = DELETE',
    'PRAGMA wal_checkpoint(TRUNCATE)',
    'SELECT * FROM pragma_integrity_check',
    'SELECT * FROM "pragma_optimize"',
    "ATTACH DATABASE '/tmp/x.db' AS x",
    'attach/**/ \'x.db\' as y',
    'DETACH x',
    'VACUUM',
    "VACUUM INTO '/tmp/copy.db'",
    "SELECT load_extension('x')",
    'SELECT "load_extension"(\'x\')',
    "SELECT 'unterminated",
    'SELECT "unterminated',
    'PRAGMA',
  ];
  for (const sql of refused) t.type(refusalOf(sql), 'string', `refused: ${sql}`);
  t.match(refusalOf('PRAGMA "locking_mode"=EXCLUSIVE'), /PRAGMA locking_mode with a value is refused/, 'the message names the normalised pragma');
  t.match(refusalOf('PRAGMA "integrity_check"'), /PRAGMA integrity_check is refused; only inspection pragmas/);
});

t.test('inspection pragmas and ordinary reads still pass, whatever the quoting', async (t) => {
  const allowed = [
    "PRAGMA table_info('users')",
    'PRAGMA "table_info"("users")',
    'PRAGMA main.index_list(users)',
    'PRAGMA [user_version]',
    'PRAGMA "schema_version"',
    'PRAGMA compile_options',
    "SELECT name FROM pragma_table_info('users')",
    "SELECT 'attach; vacuum; pragma mmap_size=1' AS words -- ATTACH in a comment",
    'SELECT "pragma" FROM t /* PRAGMA optimize */',
    "SELECT x'00ff' AS blob, 1.5e+3 AS n, ?1, :name, @v, $w",
    'SELECT a->>\'$.b\' FROM t WHERE a <> 1 AND b != 2 OR c || d',
  ];
  for (const sql of allowed) t.equal(refusalOf(sql), null, `allowed: ${sql}`);
});

t.test('the tokenizer keeps strings and quoted names whole and drops comments', async (t) => {
  t.same(tokenize(`SELECT "a""b", 'it''s', [x y] -- c\n/* d */ FROM t`), [
    { kind: 'name', value: 'select' },
    { kind: 'quoted', value: 'a"b' },
    { kind: 'op', value: ',' },
    { kind: 'string', value: "it's" },
    { kind: 'op', value: ',' },
    { kind: 'quoted', value: 'x y' },
    { kind: 'name', value: 'from' },
    { kind: 'name', value: 't' },
  ]);
});
