// Which format a recipe or cluster file is written in, from its content: spark's TOML
// (`key = value`, `[table]`) or sparkrun's YAML (`key: value`). The first line that is neither
// blank nor a comment decides; a file that says nothing either way (empty, only comments)
// goes by its extension, and TOML is the default, so its errors stay TOML's.
import { extname } from 'node:path';

export type FileFormat = 'toml' | 'yaml';

export function fileFormat(source: string, file: string): FileFormat {
  for (const raw of source.split(/\r?\n/, 200)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (/^(---|%YAML|\.\.\.)(\s|$)/.test(line)) return 'yaml';
    if (line.startsWith('[')) return 'toml';
    if (/^("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=/.test(line)) return 'toml';
    if (/^("[^"]*"|'[^']*'|[^\s:#=]+)\s*:(\s|$)/.test(line) || /^- /.test(line)) return 'yaml';
    break;
  }
  return /^\.ya?ml$/i.test(extname(file)) ? 'yaml' : 'toml';
}
