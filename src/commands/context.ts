// What every command receives from the program that runs it. A module of its own so that the
// commands and cli.ts (which lists them) both import it and neither imports the other.
import type { CommandResult, Io } from '../terminal/io.js';

export interface CliContext {
  io: Io;
  /** Called once by the command that ran, with its result. */
  emit(result: CommandResult, json: boolean): void;
}
