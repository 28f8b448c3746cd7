import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES } from '../../src/errors/error-codes.js';
import { addon, packageRoot } from '../../src/addon/index.js';

test('the C++ error-code header and the TypeScript table agree', () => {
  const header = readFileSync(join(packageRoot(), 'native/core/base/error_codes.h'), 'utf8');
  const fromHeader = Object.fromEntries(
    [...header.matchAll(/X\((E_[A-Z0-9_]+), (\d)\)/g)].map((m) => [m[1], Number(m[2])]),
  );
  assert.ok(Object.keys(fromHeader).length > 10);
  assert.deepEqual(fromHeader, { ...ERROR_CODES });
});

test('the loaded addon exports the same table', () => {
  assert.deepEqual(addon().errorCodes, { ...ERROR_CODES });
});
