// Limits on what a request may carry, checked before any handler (and before the Idempotency-Key
// fingerprint, which walks the body): nesting depth at parse time, and NUL characters anywhere.
// Both walks are iterative, so no input can exhaust the stack.

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
