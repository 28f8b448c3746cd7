// Functions of one screen: none over 80 lines in src/ and native/ (native/test aside), as
// scripts/long-functions.ts counts them (signature to closing brace).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cppFunctions,
  formatLong,
  longFunctions,
  MAX_FUNCTION_LINES,
  tsFunctions,
} from '../../scripts/long-functions.js';
import { packageRoot } from '../../src/addon/index.js';

// Still over the limit, to be split by step; this list only shrinks. An entry that is no
// longer over the limit fails the test too, so it cannot stay here after its split.
const ALLOWED_LONG = new Set<string>([]);

const body = (n: number): string => Array.from({ length: n }, (_, i) => `  x += ${i};`).join('\n');

test('the checker counts TypeScript functions, methods and arrow functions by their lines', () => {
  const text = [
    `export function long(): number {\n  let x = 0;\n${body(80)}\n  return x;\n}`,
    `class C {\n  method(): void {\n    let x = 0;\n${body(10)}\n  }\n}`,
    `const arrow = (): number => {\n  let x = 0;\n${body(79)}\n  return x;\n};`,
  ].join('\n');
  const fns = tsFunctions('x.ts', text).map((f) => [f.name, f.lines]);
  assert.deepEqual(fns, [
    ['long', 84],
    ['C.method', 13],
    ['arrow', 83],
  ]);
});

test('the checker counts C++ function bodies, not namespaces, classes or tables', () => {
  const text = [
    '#include <x>',
    'namespace spark {',
    'namespace {',
    'const int kTable[] = {',
    '  1, 2, 3,',
    '};',
    '}  // namespace',
    'class Foo : public Bar {',
    ' public:',
    '  int Get() const { return 1; }',
    '};',
    'Foo::Foo(int a) : a_(a), b_{a} {',
    '  // a } in a comment and "a { in a string" do not count',
    "  char c = '{';",
    '}',
    'Status Run(int x) {',
    '  int x = 0;',
    body(80),
    '  auto f = [&](int y) { return y; };',
    '  return Status::Ok();',
    '}',
    '}  // namespace spark',
  ].join('\n');
  const fns = cppFunctions(text).map((f) => [f.name, f.line, f.lines]);
  assert.deepEqual(fns, [
    ['Get', 10, 1],
    ['Foo::Foo', 12, 4],
    ['Run', 16, 85],
  ]);
});

test(`no function in src/ or native/ is over ${MAX_FUNCTION_LINES} lines`, () => {
  const long = longFunctions(packageRoot());
  const key = (f: { file: string; name: string }): string => `${f.file} ${f.name}`;
  const over = long.filter((f) => !ALLOWED_LONG.has(key(f))).map(formatLong);
  assert.deepEqual(over, [], `split these by step (scripts/long-functions.ts):\n${over.join('\n')}`);
  const split = [...ALLOWED_LONG].filter((k) => !long.some((f) => key(f) === k));
  assert.deepEqual(split, [], 'no longer over the limit: take them out of ALLOWED_LONG');
});
