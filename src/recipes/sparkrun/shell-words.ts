// A sparkrun `command:` as the argument vector bash -c would run, read without running a
// shell: words split on blanks, backslash-newline joins lines (a backslash followed by blanks
// and a newline too: sparkrun strips those trailing blanks), single quotes are literal, double
// quotes keep their content with \" \\ \$ \` escapes, a backslash outside quotes makes the next
// character literal, `#` at the start of a word begins a comment. What only a shell can do
// (expansions, pipes, lists, redirections, subshells) is refused, naming the line: spark starts
// the engine directly, so such a command would not do what its author meant.

export interface ShellWord {
  text: string;
  /** 0-based line within the command text where the word starts. */
  line: number;
}

/** A construct a shell would interpret; `line` is 0-based within the text. */
export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

const OPERATORS = new Set([';', '&', '|', '<', '>', '(', ')']);

export function shellWords(text: string): ShellWord[] {
  const words: ShellWord[] = [];
  let line = 0;
  let word: string | undefined;
  let wordLine = 0;
  const begin = () => {
    if (word === undefined) {
      word = '';
      wordLine = line;
    }
  };
  const end = () => {
    if (word !== undefined) words.push({ text: word, line: wordLine });
    word = undefined;
  };
  const refuse = (what: string): never => {
    throw new ShellSyntaxError(`${what}, which only a shell interprets; spark runs the command without one`, line);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n') {
      end();
      line++;
    } else if (c === ' ' || c === '\t') {
      end();
    } else if (c === '\\') {
      const rest = /^[ \t]*\n/.exec(text.slice(i + 1));
      if (rest) {
        // A continuation: the newline (and blanks before it) vanish, the word goes on.
        i += rest[0].length;
        line++;
      } else if (i + 1 < text.length) {
        begin();
        word += text[++i];
      }
    } else if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) refuse('an unclosed single quote');
      begin();
      const body = text.slice(i + 1, close);
      word += body;
      line += body.split('\n').length - 1;
      i = close;
    } else if (c === '"') {
      begin();
      const q = doubleQuoted(text, i, (what, newlines) => {
        line += newlines;
        return refuse(what);
      });
      word += q.body;
      line += q.newlines;
      i = q.close;
    } else if (c === '#' && word === undefined) {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
    } else if (c === '$' && /^[A-Za-z_{(0-9@*#?!$-]/.test(text.slice(i + 1, i + 2))) {
      refuse(`the expansion ${text.slice(i, i + 2)}…`);
    } else if (c === '`') {
      refuse('a backquote command substitution');
    } else if (OPERATORS.has(c)) {
      refuse(`the operator '${c}'`);
    } else {
      begin();
      word += c;
    }
  }
  end();
  return words;
}

/**
 * A double-quoted string from its opening quote at `open`: its text as the shell gives it, the
 * index of its closing quote and the newlines inside. `refuse` gets the newlines before the
 * refused character.
 */
function doubleQuoted(
  text: string,
  open: number,
  refuse: (what: string, newlines: number) => never,
): { body: string; close: number; newlines: number } {
  let body = '';
  let newlines = 0;
  let j = open + 1;
  for (; j < text.length && text[j] !== '"'; j++) {
    const d = text[j]!;
    if (d === '$' || d === '`') refuse(`${d === '$' ? 'a $ expansion' : 'a backquote'} inside double quotes`, newlines);
    if (d === '\\' && j + 1 < text.length) {
      const n = text[j + 1]!;
      if (n === '\n') {
        newlines++;
      } else if ('"\\$`'.includes(n)) {
        body += n;
      } else {
        body += d + n;
      }
      j++;
      continue;
    }
    if (d === '\n') newlines++;
    body += d;
  }
  if (j >= text.length) refuse('an unclosed double quote', newlines);
  return { body, close: j, newlines };
}
