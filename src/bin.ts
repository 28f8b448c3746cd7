#!/usr/bin/env node
// The only place that reads process.argv and sets the process exit code.
import { processIo } from './io.js';
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2), processIo());
