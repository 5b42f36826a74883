import type { ContenderInfo } from '../contenders/types.ts';
import type { Machine } from '../lib/machine.ts';
import type { HeldOutcome, HeldSettings } from './held.ts';
import type { WaitersCell, WaitersSettings } from './waiters.ts';

/** Everything `npm run bench:scaling` measured: bench/results/scaling.json. */
export interface ScalingResults {
  schema: 1;
  mode: 'full' | 'quick';
  command: string;
  machine: Machine;
  redisVersion: string;
  durationSeconds: number;
  loadAverageAtEnd: number[];
  contenders: ContenderInfo[];
  settings: { waiters: WaitersSettings; held: HeldSettings };
  waiters: WaitersCell[];
  held: HeldOutcome[];
  /** contender -> cell -> error: one cell failed, the run went on. */
  failures: Record<string, Record<string, string>>;
}
