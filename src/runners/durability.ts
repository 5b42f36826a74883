import type { Driver, ScriptCall } from '../driver/types.ts';
import { DurabilityError } from '../errors.ts';
import { toLeaseholdError } from './failures.ts';

/**
 * The `durability` option (Sentinel, Cluster): after an acquisition, WAIT until `replicas`
 * replicas acknowledged the write, or give the lock back. Taken before the write is sent:
 * which connection will write it (undefined when durability is off).
 */
export function durabilityEpoch(driver: Driver, key: string): number | undefined {
  return driver.durability?.epoch(key);
}

/**
 * Runs after a successful acquisition, before the lease exists. Too few acknowledgements:
 * releases the key and throws DurabilityError. WAIT not possible on the connection that wrote
 * (it dropped or was replaced): releases the key and throws RedisUnavailableError, which a
 * waiting acquire() retries.
 */
export async function confirmDurable(
  driver: Driver,
  name: string,
  key: string,
  release: ScriptCall | readonly ScriptCall[],
  epoch: number | undefined,
): Promise<void> {
  const durability = driver.durability;
  if (durability === undefined || epoch === undefined) return;
  let acknowledged: number;
  try {
    acknowledged = await durability.wait(key, epoch);
  } catch (error) {
    await giveBack(driver, release);
    throw toLeaseholdError(error, 'WAIT after acquiring');
  }
  if (acknowledged >= durability.replicas) return;
  await giveBack(driver, release);
  throw new DurabilityError(name, acknowledged, durability.replicas, durability.timeout);
}

/** Best effort: when the release cannot be sent either, the key lapses at its TTL. */
async function giveBack(driver: Driver, release: ScriptCall | readonly ScriptCall[]): Promise<void> {
  const back = 'script' in release ? [release] : release;
  await Promise.all(back.map((call) => driver.eval(call).catch(() => {})));
}
