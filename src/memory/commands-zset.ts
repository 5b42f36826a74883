import { type CommandSpec, integer, SYNTAX, upper } from './command-kit.ts';
import { formatScore, parseScore, parseScoreBound, SortedSet } from './zset.ts';

const flat = (items: { member: string; score: number }[], withScores: boolean): string[] =>
  withScores
    ? items.flatMap(({ member, score }) => [member, formatScore(score)])
    : items.map((i) => i.member);

function withScores(args: readonly string[], from: number): boolean {
  const rest = upper(args, from);
  if (rest.length > 1 || (rest.length === 1 && rest[0] !== 'WITHSCORES')) throw new Error(SYNTAX);
  return rest.length === 1;
}

/** The sorted-set commands leasehold's scripts use. */
export const zsetCommands: Record<string, CommandSpec> = {
  ZADD: {
    arity: 3,
    run(store, [key = '', ...rest], by) {
      let i = 0;
      let nx = false;
      let xx = false;
      for (; i < rest.length; i++) {
        const flag = rest[i]!.toUpperCase();
        if (flag === 'NX') nx = true;
        else if (flag === 'XX') xx = true;
        else break;
      }
      const pairs = rest.slice(i);
      if (pairs.length === 0 || pairs.length % 2 !== 0 || (nx && xx)) throw new Error(SYNTAX);
      const scores = pairs.filter((_, j) => j % 2 === 0).map((s) => parseScore(s));
      if (xx && store.typed(key, 'zset') === undefined) return 0;
      const set = store.open(key, 'zset', () => new SortedSet());
      let added = 0;
      let changed = false;
      for (let j = 0; j < scores.length; j++) {
        const member = pairs[j * 2 + 1]!;
        const exists = set.score(member) !== undefined;
        if ((nx && exists) || (xx && !exists)) continue;
        const outcome = set.set(member, scores[j]!);
        if (outcome === 'added') added += 1;
        if (outcome !== 'unchanged') changed = true;
      }
      store.wrote(key, changed, by);
      return added;
    },
  },
  ZREM: {
    arity: 2,
    run(store, [key = '', ...members], by) {
      const set = store.typed(key, 'zset');
      if (set === undefined) return 0;
      let removed = 0;
      for (const member of members) if (set.delete(member)) removed += 1;
      store.wrote(key, removed > 0, by);
      return removed;
    },
  },
  ZREMRANGEBYSCORE: {
    arity: 3,
    run(store, [key = '', min = '', max = ''], by) {
      const [lo, hi] = [parseScoreBound(min), parseScoreBound(max)];
      const set = store.typed(key, 'zset');
      if (set === undefined) return 0;
      const removed = set.removeByScore(lo, hi);
      store.wrote(key, removed > 0, by);
      return removed;
    },
  },
  ZRANGE: {
    arity: 3,
    read: true,
    run(store, args) {
      const [key = '', start, stop] = args;
      const [from, to, scores] = [integer(start), integer(stop), withScores(args, 3)];
      return flat(store.typed(key, 'zset')?.range(from, to) ?? [], scores);
    },
  },
  ZRANGEBYSCORE: {
    arity: 3,
    read: true,
    run(store, args) {
      const [key = '', min = '', max = ''] = args;
      const [lo, hi, scores] = [parseScoreBound(min), parseScoreBound(max), withScores(args, 3)];
      return flat(store.typed(key, 'zset')?.byScore(lo, hi) ?? [], scores);
    },
  },
  ZCOUNT: {
    arity: 3,
    read: true,
    run(store, [key = '', min = '', max = '']) {
      const [lo, hi] = [parseScoreBound(min), parseScoreBound(max)];
      return store.typed(key, 'zset')?.byScore(lo, hi).length ?? 0;
    },
  },
  ZCARD: {
    arity: 1,
    read: true,
    run: (store, [key = '']) => store.typed(key, 'zset')?.size ?? 0,
  },
  ZSCORE: {
    arity: 2,
    read: true,
    run(store, [key = '', member = '']) {
      const score = store.typed(key, 'zset')?.score(member);
      return score === undefined ? null : formatScore(score);
    },
  },
};
