// Limits on what a request may carry, checked before any handler (and before the Idempotency-Key
// fingerprint, which walks the body): nesting depth at parse time, and NUL characters anywhere.
// Both walks are iterative, so no input can exhaust the stack. And bytes that are not UTF-8, in the
// request target or the body, before anything decodes them.
import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';

/** The deepest nesting of arrays and objects a JSON body may have; every body of this API needs < 10. */
export const MAX_JSON_DEPTH = 32;

/** Whether a JSON text nests arrays/objects deeper than `max`, counted on the text before parsing. */
export function jsonDepthExceeds(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character, so \" does not end the string
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether any string (value or key) at any depth holds U+0000, which Postgres text cannot store. */
export function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return true;
    } else if (Array.isArray(item)) {
      for (const child of item) pending.push(child); // not push(...item): a spread of a huge array overflows
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        if (key.includes('\u0000')) return true;
        pending.push(child);
      }
    }
  }
  return false;
}

/**
 * A pass-through stream that fails with `invalid()` when the bytes through it are not valid UTF-8 (a sequence cut at
 * the end included). Every body parser reads the request through it, so none decodes bad bytes to U+FFFD. A form
 * body (`percentEncoded`) is judged as its bytes once its percent-escapes are read, as the form parser will.
 */
export function utf8Checked(invalid: () => Error, percentEncoded = false): Transform {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const chunks: Buffer[] = [];
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        if (percentEncoded) chunks.push(chunk);
        else decoder.decode(chunk, { stream: true });
      } catch {
        done(invalid());
        return;
      }
      done(null, chunk);
    },
    flush(done) {
      try {
        if (percentEncoded) {
          if (!isUtf8Target(Buffer.concat(chunks).toString('latin1'))) throw invalid();
        } else decoder.decode();
      } catch {
        done(invalid());
        return;
      }
      done();
    },
  });
}

/**
 * Whether a request target (path and query as received, before any decoding), or a form body, is valid UTF-8 once
 * its percent-escapes are read as bytes. Node hands the target over as latin1, one character per byte.
 */
export function isUtf8Target(target: string): boolean {
  const bytes = Buffer.alloc(target.length);
  let n = 0;
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c === 0x25 && /^[0-9a-fA-F]{2}$/.test(target.slice(i + 1, i + 3))) {
      bytes[n++] = Number.parseInt(target.slice(i + 1, i + 3), 16);
      i += 2;
    } else bytes[n++] = c & 0xff;
  }
  return isUtf8(bytes.subarray(0, n));
}

/**
 * Where a JSON text first breaks the grammar (RFC 8259), as a 0-based offset, or undefined when it is valid JSON.
 * For the 9400 answer to a malformed body: it says where, never what (the text may hold a card number). V8's own
 * messages name no position for an unexpected token and quote the text instead.
 */
export function jsonSyntaxErrorAt(text: string): number | undefined {
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const literal = (word: string): boolean => {
    if (text.startsWith(word, i)) {
      i += word.length;
      return true;
    }
    // the offset of the first character that differs
    for (let k = 0; k < word.length && text[i] === word[k]; k++) i++;
    return false;
  };
  const string = (): boolean => {
    i++; // the opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
            i += 2;
            return false;
          }
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else {
          i++;
          return false;
        }
      } else i++;
    }
    return false;
  };
  const number = (): boolean => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!match || match[0] === '-' || match[0] === '') return false;
    i += match[0].length;
    return true;
  };
  // iterative over containers: a deep text cannot exhaust the stack
  const stack: ('{' | '[')[] = [];
  const value = (): boolean => {
    ws();
    const c = text[i];
    if (c === '"') return string();
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      ws();
      if (text[i] === (c === '{' ? '}' : ']')) {
        stack.pop();
        i++;
        return true;
      }
      if (c === '{') {
        if (text[i] !== '"' || !string()) return false;
        ws();
        if (text[i] !== ':') return false;
        i++;
      }
      return value();
    }
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    return false;
  };
  if (!value()) return i;
  for (;;) {
    ws();
    const open = stack.at(-1);
    if (open === undefined) return i === text.length ? undefined : i;
    if (text[i] === ',') {
      i++;
      ws();
      if (open === '{') {
        if (text[i] !== '"' || !string()) return i;
        ws();
        if (text[i] !== ':') return i;
        i++;
      }
      if (!value()) return i;
    } else if (text[i] === (open === '{' ? '}' : ']')) {
      stack.pop();
      i++;
    } else return i;
  }
}

/** Where `offset` is in `text`, as a person reads it: line and column, from 1. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let k = 0; k < offset && k < text.length; k++) {
    if (text[k] === '\n') {
      line++;
      lineStart = k + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** In a `u` pattern a pair is one code point: a surrogate matches only when it stands alone. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Whether any string (value or key) at any depth holds a lone surrogate: not Unicode text, never stored. */
export function containsLoneSurrogate(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (LONE_SURROGATE.test(item)) return true;
    } else if (Array.isArray(item)) {
      for (const child of item) pending.push(child);
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return true;
        pending.push(child);
      }
    }
  }
  return false;
}
