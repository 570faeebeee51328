/**
 * A bounded map that forgets the least recently used entry first, like the LRU caches client-go's
 * event correlator keeps, so a controller that sees many Agents cannot grow without bound.
 */
export class LruMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new Error(`LruMap capacity must be a positive integer, got: ${capacity}`);
    }
  }

  get size(): number {
    return this.map.size;
  }

  /** The value, marked as most recently used. */
  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) {
      // Map iterates in insertion order: the first key is the least recently used.
      const oldest = this.map.keys().next().value as K;
      this.map.delete(oldest);
    }
  }
}
