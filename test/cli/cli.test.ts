import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bin, cli } from '../helpers/cli.js';

// Preloaded into the child: any attempt to load a native module fails loudly.
const forbidAddon = ['--import', 'data:text/javascript,process.dlopen=()=>{throw new Error("addon loaded")}'];

test('--help and --version exit 0 without loading the addon', () => {
  const help = bin(['--help'], { nodeArgs: forbidAddon });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /Usage: spark/);
  assert.match(help.stdout, /Exit codes/);
  const version = bin(['--version'], { nodeArgs: forbidAddon });
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^\d+\.\d+\.\d+/);
});

test('an unknown command is a usage error (exit 2)', async () => {
  const r = await cli(['no-such-command']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command|too many arguments/);
});
