// Whether an entrypoint script sets SPARK_ENGRAM_ROWS, read as sh reads it rather than searched
// as text: a comment or an echo naming the variable sets nothing. The script is split into
// words (quotes, backslashes and `#` comments as sh treats them) and simple commands (at
// newlines, `;`, `&`, `|`, `(` and `)`); a command sets the variable when it assigns it
// (`SPARK_ENGRAM_ROWS=… cmd`, `export SPARK_ENGRAM_ROWS=…`), or when it runs `spark wrapper`,
// which exports it itself. Here-documents and functions are not followed.

const ASSIGNING_BUILTINS = new Set(['export', 'readonly', 'declare', 'typeset', 'local']);

/** The script's simple commands, each as its words with quotes removed (expansions kept as text). */
export function shCommands(text: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) commands.push(words);
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\') {
      if (text[i + 1] === '\n') i++;
      else word = (word ?? '') + (text[++i] ?? '');
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let body = '';
      for (; j < text.length && text[j] !== '"'; j++)
        body += text[j] === '\\' && j + 1 < text.length ? text[++j] : text[j];
      word = (word ?? '') + body;
      i = j;
    } else if (c === '#' && word === undefined) {
      const end = text.indexOf('\n', i);
      i = (end < 0 ? text.length : end) - 1;
    } else if (c === '\n' || c === ';' || c === '&' || c === '|' || c === '(' || c === ')') {
      endCommand();
    } else if (c === ' ' || c === '\t' || c === '\r') {
      endWord();
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return commands;
}

const ASSIGNS = /^SPARK_ENGRAM_ROWS=/;

/** Whether a command of the script sets SPARK_ENGRAM_ROWS (see above). */
export function scriptSetsEngramRows(text: string): boolean {
  return shCommands(text).some((words) => {
    let i = 0;
    for (; i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!); i++)
      if (ASSIGNS.test(words[i]!)) return true;
    const cmd = words.slice(i);
    if (cmd[0] === 'exec' || cmd[0] === 'command') cmd.shift();
    if (cmd[0] !== undefined && ASSIGNING_BUILTINS.has(cmd[0]))
      return cmd.slice(1).some((w) => w === 'SPARK_ENGRAM_ROWS' || ASSIGNS.test(w));
    return cmd[0] !== undefined && /(^|\/)spark$/.test(cmd[0]) && cmd[1] === 'wrapper';
  });
}
