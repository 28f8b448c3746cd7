#!/usr/bin/env node
// The only place that reads process.argv and sets the process exit code.
import { processIo } from './terminal/io.js';
import { runCli } from './main.js';

// A reader that goes away (`spark --help | head`) is not an error of ours: stop writing quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

process.exitCode = await runCli(process.argv.slice(2), processIo());
