import type { Config } from '../config.ts';
import type { Contender } from '../contenders/types.ts';

/** Options of the run that some scenarios read (bench/index.ts documents them). */
export interface RunOptions {
  /** Directory for one .cpuprofile per contender worker (uncontended, budget). */
  profile?: string;
  /** Record each handoff's stages (handoff, idleHandoff). */
  stages?: boolean;
  /** Server lines for the servers scenario. */
  lines?: string[];
  /** The commit of the baseline build (budget). */
  baseline?: string;
}

/** What a scenario on one redis-server reports: the server, its settings, each contender's figures. */
export interface Measured<C> {
  redisVersion: string;
  settings: Record<string, number>;
  contenders: Record<string, C>;
}

export interface Context {
  config: Config;
  options: RunOptions;
  /** The contenders that can run here, in report order. */
  contenders: readonly Contender[];
  log(line: string): void;
  /** scenario -> contender -> first error: what went wrong for one contender without stopping the others. */
  failures: Record<string, Record<string, string>>;
}

/** An error as the results keep it: its message, or with `stack` its stack when it has one. */
export const errorText = (error: unknown, stack = false): string =>
  error instanceof Error ? ((stack ? error.stack : undefined) ?? error.message) : String(error);

/** Records the first error of `who` (a contender, or a cell) in the run's failures and logs it. */
export function fail(ctx: Context, scenario: string, who: string, error: unknown): void {
  const message = errorText(error);
  ctx.failures[scenario] ??= {};
  ctx.failures[scenario][who] ??= message;
  ctx.log(`  ${scenario} ${who}: FAILED: ${message.split('\n')[0]}`);
}

/**
 * Runs one contender's part of a scenario; an error is logged and recorded (the report lists it)
 * instead of ending the scenario for everyone. Resolves undefined when `task` threw.
 */
export async function guard<T>(
  ctx: Context,
  scenario: string,
  contender: string,
  task: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await task();
  } catch (error) {
    fail(ctx, scenario, contender, error);
    return undefined;
  }
}

/** Each contender's rounds summed up by `summary`; a contender without a round is left out. */
export function summaries<R, S>(rounds: Map<string, R[]>, summary: (list: R[]) => S): Record<string, S> {
  const run = [...rounds].filter(([, list]) => list.length > 0);
  return Object.fromEntries(run.map(([id, list]) => [id, summary(list)]));
}

/** Contenders for one round, rotated so that no contender always runs first (or right after another). */
export function order(contenders: readonly Contender[], round: number): Contender[] {
  const list = [...contenders];
  const shift = round % Math.max(1, list.length);
  return [...list.slice(shift), ...list.slice(0, shift)];
}

/** Lock names unique to one run, so that rounds and contenders never see each other's keys. */
export function lockName(...parts: (string | number)[]): string {
  return ['bench', process.pid, ...parts].join(':');
}

/** Runs `task` for every element with at most `limit` in flight. */
export async function inPool<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await task(items[index]!, index);
    }
  });
  await Promise.all(lanes);
}

/** Formats ms for progress lines. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return value < 10 ? `${value.toFixed(3)} ms` : `${value.toFixed(0)} ms`;
}
