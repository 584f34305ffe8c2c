// Task tokens: opaque to workers, JSON inside so the engine can find the task again (also across restarts).
// Tokens in Temporal's own format (temporal.server.api.token.v1.Task, protobuf) are read too, so a token built the
// way Temporal builds it — e.g. for an activity that does not exist — gets Temporal's answer (NOT_FOUND), not a
// refusal of its format.
import { createHash } from 'node:crypto';
import { invalid, namespaceNotFound } from './errors.js';

export interface TaskToken {
  /** What the token is for: a workflow task, an activity attempt or a legacy query task. */
  k: 'wft' | 'act' | 'query';
  ns: string;
  /** Run id. */
  r: string;
  /** Scheduled event id of the task. */
  s: number;
  /** Attempt the token was issued for; a later attempt makes it stale. */
  a: number;
  q?: string;
}

export const encodeToken = (t: TaskToken): Buffer => Buffer.from(JSON.stringify(t));

/** Temporal's answer to bytes that are no task token. */
const MALFORMED = 'Error deserializing task token.';
const JSON_OPEN_BRACE = 0x7b;

/**
 * The token of a task. `namespaces` (the server's namespace names) resolve the namespace id a token in Temporal's
 * format carries: an id none of them has is NamespaceNotFound, as on Temporal. Without them such a token's
 * namespace is '' and it finds no task.
 */
export function decodeToken(buf: Uint8Array | null | undefined, namespaces?: Iterable<string>): TaskToken {
  if (!buf || buf.byteLength === 0) throw invalid('Task token not set on request.');
  const bytes = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (bytes[0] !== JSON_OPEN_BRACE) return fromTemporalToken(readTemporalToken(bytes), namespaces);
  try {
    const t = JSON.parse(bytes.toString('utf8')) as TaskToken;
    if (!t || typeof t.r !== 'string') throw new Error('bad token');
    return t;
  } catch {
    throw invalid(MALFORMED);
  }
}

/**
 * The id a namespace has in this server: a UUID derived from its name, so it is the same after a restart and
 * in every process (Temporal's namespace ids are UUIDs; clients splice them into tokens they build).
 */
export function namespaceId(name: string): string {
  const h = createHash('sha1').update(`temporal-devserver namespace\u0000${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50; // version 5 (name-based, SHA-1)
  h[8] = (h[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The fields of temporal.server.api.token.v1.Task the engine needs. */
interface TemporalTaskToken {
  namespaceId: string;
  runId: string;
  scheduledEventId: number;
  attempt: number;
  activityId: string;
  activityType: string;
}

function fromTemporalToken(t: TemporalTaskToken, namespaces: Iterable<string> | undefined): TaskToken {
  if (!t.namespaceId) throw invalid('Namespace not set on request.');
  let ns = '';
  if (namespaces) {
    for (const name of namespaces) {
      if (namespaceId(name) === t.namespaceId) ns = name;
    }
    if (!ns) throw namespaceNotFound(t.namespaceId);
  }
  return {
    k: t.activityId || t.activityType ? 'act' : 'wft',
    ns,
    r: t.runId,
    s: t.scheduledEventId,
    a: t.attempt,
  };
}

/** Reads the protobuf wire format of a Task token; anything that is not well-formed protobuf is MALFORMED. */
function readTemporalToken(b: Buffer): TemporalTaskToken {
  const t: TemporalTaskToken = { namespaceId: '', runId: '', scheduledEventId: 0, attempt: 0, activityId: '', activityType: '' };
  let pos = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= b.length) throw invalid(MALFORMED);
      const byte = b[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw invalid(MALFORMED);
  };
  const bytesField = (): Buffer => {
    const len = varint();
    if (pos + len > b.length) throw invalid(MALFORMED);
    const out = b.subarray(pos, pos + len);
    pos += len;
    return out;
  };
  while (pos < b.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (field === 0) throw invalid(MALFORMED);
    if (wire === 0) {
      const v = varint();
      if (field === 4) t.scheduledEventId = v;
      else if (field === 5) t.attempt = v;
    } else if (wire === 2) {
      const v = bytesField();
      if (field === 1) t.namespaceId = v.toString('utf8');
      else if (field === 3) t.runId = v.toString('utf8');
      else if (field === 6) t.activityId = v.toString('utf8');
      else if (field === 8) t.activityType = v.toString('utf8');
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
      if (pos > b.length) throw invalid(MALFORMED);
    } else {
      throw invalid(MALFORMED);
    }
  }
  return t;
}
