// How a journal line is written and read: JSON with byte arrays (payloads) as base64. Its own module because both the
// journal (journal.ts) and the deltas it stores (journal-delta.ts) write lines, and the journal reads the deltas.
function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (original instanceof Uint8Array) return { $b64: Buffer.from(original).toString('base64') };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value && typeof value === 'object' && '$b64' in value) {
    return Buffer.from(String((value as { $b64: string }).$b64), 'base64');
  }
  return value;
}

export function serialize(value: unknown): string {
  return JSON.stringify(value, replacer);
}

export function deserialize<T>(line: string): T {
  return JSON.parse(line, reviver) as T;
}
