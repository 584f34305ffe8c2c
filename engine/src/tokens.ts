// Task tokens: opaque to workers, JSON inside so the engine can find the task again (also across restarts).
import { invalid } from './errors.js';

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

export function decodeToken(buf: Uint8Array | null | undefined): TaskToken {
  try {
    const t = JSON.parse(Buffer.from(buf ?? []).toString('utf8')) as TaskToken;
    if (!t || typeof t.r !== 'string') throw new Error('bad token');
    return t;
  } catch {
    throw invalid('malformed task token');
  }
}
