// spark engine-lib: the built row library for a serving stack (docs/engine-libs.md): its path,
// the image path to bind-mount it over, its machine and digest, or a copy of it.
import { Command } from 'commander';
import type { CliContext } from './context.js';
import type { CommandResult } from '../terminal/io.js';
import { copyEngineLibrary, describeLibrary, engineLibrary } from '../engine-lib/engine-lib.js';
import { parseStack, STACKS } from '../stacks/registry.js';

export interface EngineLibOptions {
  stack?: string;
  copy?: string;
  json?: boolean;
}

export function runEngineLib(options: EngineLibOptions): CommandResult {
  const info = engineLibrary(parseStack(options.stack));
  const file = describeLibrary(info.library);
  const copied = options.copy !== undefined ? copyEngineLibrary(info, options.copy) : undefined;
  const path = copied ?? info.library;
  return {
    json: { ...info, ...file, ...(copied !== undefined ? { copiedTo: copied } : {}) },
    text: path,
    exitCode: 0,
  };
}

export function engineLibCommand(ctx: CliContext): Command {
  return new Command('engine-lib')
    .description("print (or copy) spark's drop-in row library for a serving stack, built from the row store's core")
    .requiredOption(
      '--stack <stack>',
      STACKS.map((s) => `${s.name} (${s.libraryFile}${s.abiVersion ? `, ABI ${s.abiVersion}` : ''})`).join(' or '),
    )
    .option('--copy <dir>', 'copy the library into this existing directory and print the copy')
    .option('--json', 'one JSON document: library, imagePath (the mount target), machine, bytes, sha256, symbols')
    .addHelpText(
      'after',
      `
Prints the path of the built file. Mount it read-only over imagePath in the engine's container
(docs/engine-libs.md has the recipe lines): the stack then gathers Engram rows with spark's code.

Examples:
  spark engine-lib --stack overlay
  spark engine-lib --stack mia --json`,
    )
    .action((opts: EngineLibOptions) => {
      ctx.emit(runEngineLib(opts), Boolean(opts.json));
    });
}
