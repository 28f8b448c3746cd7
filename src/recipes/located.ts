// Where a loaded file wrote each field of the object it became, resolved when the file is read.
// Messages ask by the object's field (`recipe.locate('shmSize')`), so a renamed field is a type
// error rather than a lookup that silently finds no line.
import type { TomlPosition } from './toml-positions.js';

/** What a field's location can be narrowed to: an element of an array, a key of a table. */
export type FieldPart<V> =
  NonNullable<V> extends readonly unknown[] ? number : NonNullable<V> extends Record<string, unknown> ? string : never;

/**
 * The 1-based line that wrote `field` (with `part`: that element or key, else the field's own
 * line); undefined when the file does not write the field.
 */
export type Locate<T, F extends keyof T> = <K extends F>(field: K, part?: FieldPart<T[K]>) => number | undefined;

/** `fields` maps each located field to the TOML key that writes it, in `table`. */
export function locator<T, F extends keyof T & string>(
  fields: Record<F, string>,
  table: TomlPosition | undefined,
): Locate<T, F> {
  const written = new Map<F, TomlPosition>();
  for (const [field, key] of Object.entries(fields) as [F, string][]) {
    const at = table?.keys.get(key);
    if (at) written.set(field, at);
  }
  return (field, part) => {
    const at = written.get(field);
    const inner =
      typeof part === 'number' ? at?.items[part] : typeof part === 'string' ? at?.keys.get(part) : undefined;
    return (inner ?? at)?.line;
  };
}
