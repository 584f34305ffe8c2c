// Which presented key a project accepts: its current one, or the one it replaced while the rotation's
// grace period runs. Both comparisons always run (constant time either way), so the answer's timing
// does not tell whether a rotation is in progress.
import { secretMatches } from '../platform/ids.js';

export interface RotatingKey {
  /** SHA-256 hex of the current key */
  readonly current: string;
  /** SHA-256 hex of the key before the last rotation, if any */
  readonly previous: string | null;
  /** when the previous key stops working */
  readonly previousExpiresAt: Date | null;
}

export function keyAccepted(presented: string, key: RotatingKey, now: Date): boolean {
  const current = secretMatches(presented, key.current);
  const previous = secretMatches(presented, key.previous ?? key.current);
  const inGrace = key.previous !== null && key.previousExpiresAt !== null && now.getTime() < key.previousExpiresAt.getTime();
  return current || (inGrace && previous);
}
