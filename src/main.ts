// Runs the CLI against an Io and returns the exit code. Shared by bin.ts and the tests.
import { CommanderError } from 'commander';
import { buildProgram, commanderExitCode, commanderMessage } from './cli.js';
import { toSparkError } from './errors/errors.js';
import { toJson, type Io } from './terminal/io.js';

export async function runCli(argv: string[], io: Io): Promise<number> {
  let exitCode = 0;
  const program = await buildProgram(
    {
      io,
      emit(result, json) {
        io.stdout(json ? toJson(result.json) + '\n' : result.text.endsWith('\n') ? result.text : result.text + '\n');
        exitCode = result.exitCode;
      },
    },
    argv,
  );
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      const code = commanderExitCode(err);
      if (code !== 0 && argv.includes('--json'))
        io.stderr(toJson({ error: { code: 'E_USAGE', message: commanderMessage(err) } }, 0) + '\n');
      return code;
    }
    const e = toSparkError(err);
    if (argv.includes('--json')) {
      io.stderr(toJson({ error: { code: e.code, message: e.message, ...e.details } }, 0) + '\n');
    } else {
      io.stderr(`spark: ${e.message}\n`);
    }
    return e.exitCode;
  }
}
