import { type CommandSpec, integer, SYNTAX } from './command-kit.ts';
import { parseRangeId, Stream } from './stream.ts';

/** `[COUNT n]` after a range: the limit, or undefined when COUNT 0 (Redis then replies nil). */
function countOf(rest: readonly string[]): number | undefined {
  if (rest.length === 0) return Number.POSITIVE_INFINITY;
  if (rest.length !== 2 || rest[0]!.toUpperCase() !== 'COUNT') throw new Error(SYNTAX);
  const count = Math.max(0, integer(rest[1]));
  return count === 0 ? undefined : count;
}

function range(reverse: boolean): CommandSpec {
  return {
    arity: 3,
    read: true,
    run(store, [key = '', first = '', second = '', ...rest]) {
      const [startText, endText] = reverse ? [second, first] : [first, second];
      const [start, end] = [parseRangeId(startText, 'start'), parseRangeId(endText, 'end')];
      const count = countOf(rest);
      if (count === undefined) return null;
      return store.typed(key, 'stream')?.range(start, end, count, reverse) ?? [];
    },
  };
}

/** The stream commands leasehold's scripts use: XADD with MAXLEN, XRANGE, XREVRANGE. */
export const streamCommands: Record<string, CommandSpec> = {
  XADD: {
    arity: 4,
    run(store, [key = '', ...rest], by) {
      let maxlen: number | undefined;
      let i = 0;
      if (rest[0]?.toUpperCase() === 'MAXLEN') {
        i = rest[1] === '~' || rest[1] === '=' ? 2 : 1;
        maxlen = integer(rest[i]);
        if (maxlen < 0) throw new Error('ERR The MAXLEN argument must be >= 0.');
        i += 1;
      }
      const id = rest[i];
      const fields = rest.slice(i + 1);
      if (id === undefined || fields.length === 0 || fields.length % 2 !== 0) {
        throw new Error("ERR wrong number of arguments for 'xadd' command");
      }
      const next = (store.typed(key, 'stream') ?? new Stream()).nextId(id, Math.floor(store.micros() / 1000));
      const stream = store.open(key, 'stream', () => new Stream());
      const added = stream.append(next, fields);
      if (maxlen !== undefined) stream.trim(maxlen);
      store.wrote(key, true, by);
      return added;
    },
  },
  XRANGE: range(false),
  XREVRANGE: range(true),
  XLEN: {
    arity: 1,
    read: true,
    run: (store, [key = '']) => store.typed(key, 'stream')?.size ?? 0,
  },
};
