// What test/integration/script-tracking.test.ts runs per case: one script on a tracked
// connection, and which of its keys that armed.
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import type { Script } from '../../src/scripts/index.ts';
import { uniquePrefix } from './leasehold.ts';

/**
 * Runs `setup` on a plain connection, the script on a tracked one (RESP3, NOLOOP, as leasehold's
 * own connection), then writes every declared key from the plain connection and returns the
 * keys the tracked connection heard of (by short name) and the script's reply.
 */
export async function armedBy(
  url: string,
  run: { script: Script; keys: string[]; args: (string | number)[] },
  setup: (string | number)[][] = [],
): Promise<{ heard: string[]; reply: unknown }> {
  const prefix = `${uniquePrefix('arm')}:{x}`;
  const full = (k: string) => `${prefix}:${k}`;
  const expand = (arg: string | number) => String(arg).replaceAll('@', `${prefix}:`);
  const tracked = createClient({ url, RESP: 3, emitInvalidate: true });
  const plain = createClient({ url });
  const heard = new Set<string>();
  tracked.on('invalidate', (key: unknown) => {
    if (key !== null) heard.add(String(key).slice(prefix.length + 1));
  });
  await Promise.all([tracked.connect(), plain.connect()]);
  try {
    await tracked.sendCommand(['CLIENT', 'TRACKING', 'ON', 'NOLOOP']);
    for (const command of setup) await plain.sendCommand(command.map(expand));
    const reply = await tracked.sendCommand([
      'EVAL',
      run.script.source,
      String(run.keys.length),
      ...run.keys.map(full),
      ...run.args.map(expand),
    ]);
    for (const k of run.keys) await plain.sendCommand(['SET', full(k), 'changed']);
    // The pushes for those writes were sent before the PING's reply on the tracked connection.
    await tracked.sendCommand(['PING']);
    await sleep(10);
    return { heard: [...heard].sort(), reply };
  } finally {
    tracked.destroy();
    plain.destroy();
  }
}

export interface Case {
  name: string;
  run: { script: Script; keys: string[]; args: (string | number)[] };
  setup?: (string | number)[][];
  /** The keys the caller listens to after this outcome: armed under every rule. */
  must: string[];
  /** Exactly what the read-keys rule (Redis >= 7.2, Valkey) arms: `must` plus reads a decision needs. */
  read: string[];
}
