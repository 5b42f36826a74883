import { keySlot } from '../driver/cluster-topology.ts';
import type { Driver } from '../driver/types.ts';
import { QuorumRunner } from './quorum-runner.ts';

const SLOTS = 16_384;
/** Hash tags whose replica suffixes are remembered; past this the memo starts again. */
const MEMO_SIZE = 10_000;

/**
 * rueidislock's KeyMajority on one Redis Cluster: every lock name is `n` keys, each in a slot of
 * its own, and a lease needs a majority of them. A shard failover that loses one key (the
 * replica it promoted had not received the write) leaves the majority standing, and the next
 * extension puts the lost key back. Replica `i`'s key carries the hash tag `{<tag>#<j>}`, with
 * `j` the first number (i, i + n, i + 2n, ...) whose slot lies in the i-th n-th of the slot
 * range: on a cluster whose masters own equal contiguous ranges (what `redis-cli --cluster
 * create` makes) the n keys of a name then live on n different masters whenever n <= masters.
 * Every process derives the same keys from the name alone.
 */
export function keyMajority(driver: Driver, n: number): QuorumRunner {
  const memo = new Map<string, number[]>();
  const suffixes = (tag: string): number[] => {
    let known = memo.get(tag);
    if (known === undefined) {
      if (memo.size >= MEMO_SIZE) memo.clear();
      known = Array.from({ length: n }, (_, i) => suffixIn(tag, i, n));
      memo.set(tag, known);
    }
    return known;
  };
  const replicas = Array.from({ length: n }, (_, i) => ({
    driver,
    key: (key: string) => {
      const tag = tagOf(key);
      if (tag === undefined) return key;
      return `${key.slice(0, tag.close)}#${suffixes(tag.text)[i]}${key.slice(tag.close)}`;
    },
  }));
  return new QuorumRunner(replicas, logicalKey);
}

/** The first suffix for replica `i` whose slot lies in its share of the slot range. */
function suffixIn(tag: string, i: number, n: number): number {
  const from = Math.floor((i * SLOTS) / n);
  const to = Math.floor(((i + 1) * SLOTS) / n);
  for (let j = i; j < i + 1_000 * n; j += n) {
    const slot = keySlot(`{${tag}#${j}}`);
    if (slot >= from && slot < to) return j;
  }
  return i; // unreachable in practice (each try hits with probability 1/n)
}

/** Where a key's hash tag is (Redis's rule: from the first '{' to the next '}'). */
function tagOf(key: string): { text: string; close: number } | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return { text: key.slice(open + 1, close), close };
}

/** A replica's key as its name's key: `x:{job#7}` -> `x:{job}` (other keys unchanged). */
export function logicalKey(key: string): string {
  const tag = tagOf(key);
  if (tag === undefined) return key;
  const hash = tag.text.lastIndexOf('#');
  if (hash === -1 || !/^\d+$/.test(tag.text.slice(hash + 1))) return key;
  return key.slice(0, tag.close - (tag.text.length - hash)) + key.slice(tag.close);
}
