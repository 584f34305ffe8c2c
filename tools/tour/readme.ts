// README's "A short tour", read as the tour runs it: its steps, and for each the requests its shell code sends
// (`METHOD /path`, a path segment from a variable as `{}`) with the JSON body each sends first. The tour compares its
// own requests and bodies with these (tools/tour/tour.ts), so README cannot drift from what CI runs; the README-tour
// test holds the steps and requests together without a server (test/platform/tour-readme.test.ts).

export interface ReadmeRequest {
  readonly request: string;
  /** the JSON body of its first use, a shell variable spliced in as the string `$NAME`; absent: no body */
  readonly body?: unknown;
}

export interface ReadmeStep {
  readonly number: number;
  readonly title: string;
  /** in the order of their first use, a repeated request once */
  readonly requests: readonly ReadmeRequest[];
}

/**
 * One shell word from `at`: quotes removed, `$NAME` / `${NAME}` / `$(...)` kept as their text (a placeholder, not
 * expanded). Ends at unquoted whitespace or a shell operator. Returns the word and where it ended.
 */
export function shellWord(code: string, at: number): { word: string; end: number } {
  let i = at;
  let word = '';
  const variable = () => {
    const m = /^\$(\{\w+\}|\w+|\([^)]*\))/.exec(code.slice(i));
    if (!m) {
      word += '$';
      i++;
      return;
    }
    word += m[0].startsWith('${') ? `$${m[1]!.slice(1, -1)}` : m[0];
    i += m[0].length;
  };
  while (i < code.length) {
    const c = code[i]!;
    if (c === "'") {
      const close = code.indexOf("'", i + 1);
      const stop = close < 0 ? code.length : close;
      word += code.slice(i + 1, stop);
      i = stop + 1;
    } else if (c === '"') {
      i++;
      while (i < code.length && code[i] !== '"') {
        if (code[i] === '\\' && i + 1 < code.length) {
          word += code[i + 1];
          i += 2;
        } else if (code[i] === '$') variable();
        else word += code[i++];
      }
      i++;
    } else if (c === '$') variable();
    else if (c === '\\' && code[i + 1] === '\n') i += 2;
    else if (/[\s;|&)]/.test(c)) break;
    else word += code[i++];
  }
  return { word, end: i };
}

/** The JSON a `-d` word stands for: the word itself, or the value a `NAME=` assignment in `code` gave `$NAME`. */
function bodyOf(word: string, code: string): unknown {
  let text = word;
  const variable = /^\$(\w+)$/.exec(word);
  if (variable) {
    const assigned = new RegExp(`(^|[\\s;])${variable[1]}=`).exec(code);
    if (!assigned) return undefined;
    text = shellWord(code, assigned.index + assigned[0].length).word;
  }
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The requests a block of shell runs against paygate, in order of first use, each with its first body; a body sent
 * as `"$NAME"` is the value `NAME=` is given in `context` (the whole tour: an earlier step may set it).
 */
export function curlRequests(code: string, context: string = code): ReadmeRequest[] {
  const requests: ReadmeRequest[] = [];
  // a comment is not a command (a # that starts a word, outside quotes on its line)
  const lines = code.split('\n').map((line) => line.replace(/(^|\s)#\s.*$/, ''));
  const text = lines.join('\n');
  for (const curl of text.matchAll(/\bcurl\s/g)) {
    // the command's words, up to its unquoted end
    const words: string[] = [];
    let i = curl.index + curl[0].length;
    while (i < text.length) {
      while (i < text.length && (text[i] === ' ' || text[i] === '\t' || (text[i] === '\\' && text[i + 1] === '\n'))) {
        i += text[i] === '\\' ? 2 : 1;
      }
      if (i >= text.length || /[\n;|&)]/.test(text[i]!)) break;
      const { word, end } = shellWord(text, i);
      words.push(word);
      i = end;
    }
    const target = words.find((w) => /localhost:8080\//.test(w));
    if (target === undefined) continue;
    const url = /localhost:8080(\/[^\s?]*)/.exec(target)!;
    const dataAt = words.findIndex((w) => w === '-d' || w === '--data');
    const methodAt = words.indexOf('-X');
    const method = methodAt >= 0 ? words[methodAt + 1]! : dataAt >= 0 ? 'POST' : 'GET';
    const path = url[1]!.replace(/\/\$\w+/g, '/{}');
    const request = `${method} ${path}`;
    if (requests.some((r) => r.request === request)) continue;
    const body = dataAt >= 0 ? bodyOf(words[dataAt + 1] ?? '', context) : undefined;
    requests.push(body === undefined ? { request } : { request, body });
  }
  return requests;
}

/** README's tour: its steps are the lines `**<n>. <title>**`, each with the code blocks up to the next step. */
export function readmeTourSteps(readme: string): ReadmeStep[] {
  const start = readme.indexOf('\n## A short tour\n');
  if (start < 0) throw new Error('README has no "## A short tour" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const heads = [...section.matchAll(/^\*\*(\d+)\. (.+?)\.?\*\*/gm)];
  // a body variable may be assigned in an earlier step (CHARGE in step 3, sent again in step 4)
  const allCode = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).join('\n');
  return heads.map((head, i) => {
    const body = section.slice(head.index + head[0].length, heads[i + 1]?.index ?? section.length);
    const code = [...body.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).join('\n');
    return { number: Number(head[1]), title: head[2]!, requests: curlRequests(code, allCode) };
  });
}

/**
 * Where a body the tour sends differs from README's, or undefined: the same keys at every depth, and the same values
 * but where README splices in a shell variable (`$NAME`) or the tour puts in a value of its own run (`isRunValue`:
 * its order ids, keys and names that let it run again on the same server).
 */
export function bodyDifference(
  readme: unknown,
  sent: unknown,
  isRunValue: (value: unknown) => boolean,
  at = 'body',
): string | undefined {
  if (typeof readme === 'string' && readme.startsWith('$')) return undefined;
  if (isRunValue(sent)) return undefined;
  if (Array.isArray(readme) || Array.isArray(sent)) {
    if (!Array.isArray(readme) || !Array.isArray(sent) || readme.length !== sent.length)
      return `${at}: README ${JSON.stringify(readme)}, the tour ${JSON.stringify(sent)}`;
    for (let i = 0; i < readme.length; i++) {
      const d = bodyDifference(readme[i], sent[i], isRunValue, `${at}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (typeof readme === 'object' && readme !== null && typeof sent === 'object' && sent !== null) {
    const a = Object.keys(readme).sort();
    const b = Object.keys(sent).sort();
    if (a.join() !== b.join()) return `${at}: README's keys ${a.join(', ')}; the tour's ${b.join(', ')}`;
    for (const key of a) {
      const d = bodyDifference(
        (readme as Record<string, unknown>)[key],
        (sent as Record<string, unknown>)[key],
        isRunValue,
        `${at}.${key}`,
      );
      if (d) return d;
    }
    return undefined;
  }
  return readme === sent ? undefined : `${at}: README ${JSON.stringify(readme)}, the tour ${JSON.stringify(sent)}`;
}
