// The lines a failed launch quotes from a node: docker's own error, not the hint its CLI prints
// after it; the last lines of an engine's output, on one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerError } from '../../src/launch/run-launch.js';
import { lastLines } from '../../src/remote/ssh.js';

test("dockerError: the daemon's error line, without docker run's --help hint", () => {
  const tail = [
    'docker: Error response from daemon: invalid mount config for type "bind": bind source path does not exist: /home/op/launch.sh',
    '',
    "Run 'docker run --help' for more information",
  ];
  assert.equal(dockerError(tail), tail[0]);
  assert.equal(
    dockerError(['Unable to find image', 'docker: Error response from daemon: pull access denied']),
    'docker: Error response from daemon: pull access denied',
  );
  assert.equal(dockerError([]), '');
});

test('lastLines: the last non-empty lines joined with " | "', () => {
  assert.equal(lastLines('a\n\nb\r\nc\n  d  \n\n', 3), 'b | c | d');
  assert.equal(lastLines('only\n', 3), 'only');
  assert.equal(lastLines('', 3), '');
});
