/**
 * A Map that forgets its oldest entries beyond `capacity`: the sandbox's state (in memory, journaled
 * in DATA_DIR) must not grow without bound under a long test run or a load test.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }

  values(): IterableIterator<V> {
    return this.entries.values();
  }

  /** oldest first: replaying them in this order keeps the same entries on top */
  pairs(): IterableIterator<[K, V]> {
    return this.entries.entries();
  }
}
