// The one place a recipe file is read: spark's TOML or a sparkrun YAML recipe, chosen by the
// file's content (format.ts), both into the same typed Recipe.
import { homedir } from 'node:os';
import { fileFormat } from './format.js';
import { parseRecipe, type LoadedRecipe } from './recipe.js';
import { parseSparkrunRecipe } from './sparkrun/recipe.js';
import { readTextFile } from './toml-file.js';

export interface RecipeReadOptions {
  /** The launching machine's environment ($VAR in a sparkrun recipe's env). */
  env?: NodeJS.ProcessEnv;
  /** The cluster's hf_cache, for a sparkrun recipe's {launch.model_path}. */
  hfCache?: string;
  home?: string;
}

export async function readRecipe(path: string, options: RecipeReadOptions = {}): Promise<LoadedRecipe> {
  const source = await readTextFile(path, 'recipe');
  return parseAnyRecipe(source, path, options);
}

export async function parseAnyRecipe(
  source: string,
  file: string,
  options: RecipeReadOptions = {},
): Promise<LoadedRecipe> {
  if (fileFormat(source, file) === 'toml') return parseRecipe(source, file);
  const env = options.env ?? {};
  return parseSparkrunRecipe(source, file, {
    env,
    home: options.home ?? env.HOME ?? homedir(),
    ...(options.hfCache !== undefined ? { hfCache: options.hfCache } : {}),
  });
}
