// The hex a node's sh sends (od's bytes, spaces removed) back to bytes, for every record of the
// probe and the engine-library command. Checked without a regular expression: a pattern with a
// repeated group (`^([0-9a-f]{2})*$`) recurses once per byte and throws "Maximum call stack size
// exceeded" on a few MiB of hex, which a 64 MiB library file is sixteen times over.

/** The bytes of `hex`, or undefined when it is not whole bytes of hex digits; linear in its length. */
export function hexBytes(hex: string): Buffer | undefined {
  // Buffer's decoder stops at the first pair that is not two hex digits: a decode of exactly
  // half the text's length means every character was one.
  const bytes = Buffer.from(hex, 'hex');
  return bytes.length * 2 === hex.length ? bytes : undefined;
}
