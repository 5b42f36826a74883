// `npm run demo` / `leasehold demo`: several processes contend for one lock with a live view,
// then the holder is SIGKILLed and the lock is taken over, to show loss detection and recovery.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DOCS, EXIT } from '../cli/exit.ts';
import { Leasehold } from '../index.ts';
import { demoRedis, removeKeys } from './redis.ts';

interface Event {
  id: string;
  at: number;
  type: string;
  fencingToken?: string;
  reason?: string;
}

const WORKERS = 4;
const tty = process.stdout.isTTY === true;
const now = () => performance.timeOrigin + performance.now();
const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;

/** Runs the demo; resolves with the exit code (69 when Redis is unreachable, as in the CLI). */
export async function runDemo(): Promise<number> {
  const redis = await demoRedis();
  if (redis === undefined) {
    console.error(
      'leasehold demo: no redis-server found: install one (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis), fetch one with `bash scripts/servers.sh valkey-8.0`, or set REDIS_URL to a server the demo may write to',
    );
    return EXIT.unavailable;
  }
  console.log(`leasehold demo: ${WORKERS} processes share the lock "report" on ${redis.description}\n`);
  let lh: Leasehold;
  try {
    lh = await Leasehold.connect({ url: redis.url, prefix: `demo-${process.pid}`, connectTimeout: 2_000 });
  } catch (error) {
    console.error(`Could not reach Redis: ${(error as Error).message}`);
    console.error(
      'Install Redis (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis),',
    );
    console.error('or point REDIS_URL at a running server, then run the demo again.');
    redis.stop();
    return EXIT.unavailable;
  }
  const prefix = `demo-${process.pid}`;
  const events: Event[] = [];
  const workers = new Map<string, ChildProcess>();
  let holder: string | undefined;
  let lastRelease: Event | undefined;
  const gaps: number[] = [];
  const onEvent = (event: Event) => {
    events.push(event);
    if (event.type === 'acquired') {
      if (lastRelease !== undefined && lastRelease.id !== event.id) gaps.push(event.at - lastRelease.at);
      holder = event.id;
    } else if (event.type === 'releasing' || event.type === 'lost') {
      lastRelease = event;
      if (holder === event.id) holder = undefined;
    }
    render(event);
  };
  const render = (event: Event) => {
    const line =
      event.type === 'acquired'
        ? `worker ${event.id} holds the lock    fencing token ${event.fencingToken}`
        : event.type === 'releasing'
          ? `worker ${event.id} releases`
          : event.type === 'lost'
            ? `worker ${event.id} LOST the lock: ${event.reason}`
            : `worker ${event.id} ${event.type}`;
    if (tty && event.type !== 'lost' && event.type !== 'ready') process.stdout.write(`\r\x1b[2K  ${line}`);
    else if (event.type !== 'ready') console.log(`  ${line}`);
  };

  // The heading comes before the workers start: their first events follow it, not precede it.
  console.log('1. Contention: each worker holds the lock for 300 ms, then steps aside.');
  const self = fileURLToPath(import.meta.url);
  const workerFile = self.replace(/main\.(ts|js)$/, (_, ext: string) => `worker.${ext}`);
  for (let i = 1; i <= WORKERS; i++) {
    const id = String(i);
    const child = spawn(process.execPath, [...process.execArgv, workerFile, redis.url, prefix, id], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    workers.set(id, child);
    createInterface({ input: child.stdout! }).on('line', (text) => {
      try {
        onEvent(JSON.parse(text) as Event);
      } catch {
        // not an event line
      }
    });
  }
  const stopAll = () => {
    for (const child of workers.values()) if (child.exitCode === null) child.kill('SIGKILL');
    redis.stop();
  };
  process.once('exit', stopAll);

  try {
    await waitFor(
      () => (events.filter((e) => e.type === 'ready').length === WORKERS ? true : undefined),
      20_000,
    );
    const raw = await rawClient(redis.url);
    await sleep(5_000);
    console.log(
      `${tty ? '\n' : ''}   ${gaps.length} handoffs between processes; median gap ${fmt(median(gaps))}, ` +
        `worst ${fmt(Math.max(...gaps))} (waiters retry on Redis's invalidation push, no polling)\n`,
    );

    console.log('2. Crash: the holder is killed with SIGKILL; its lease lapses at its TTL (1000 ms).');
    const victim = await waitFor(() => holder);
    workers.get(victim)?.kill('SIGKILL');
    const killedAt = now();
    workers.delete(victim);
    const remaining = await raw.pTTL(`${prefix}:{report}`);
    raw.destroy();
    const next = await waitForEvent(events, (e) => e.type === 'acquired' && e.at > killedAt, 5_000);
    const recovery = next.at - killedAt;
    console.log(
      `${tty ? '\n' : ''}   worker ${victim} killed with ${remaining} ms of TTL left; ` +
        `worker ${next.id} took over ${fmt(recovery)} later (${fmt(recovery - remaining)} beyond the TTL)\n`,
    );

    console.log('3. Takeover: this process calls forceAcquire while a worker holds the lock.');
    const current = await waitFor(() => holder);
    const forcedAt = now();
    const taken = await lh.forceAcquire('report');
    const lost = await waitForEvent(events, (e) => e.type === 'lost' && e.at > forcedAt, 5_000);
    const detection = lost.at - forcedAt;
    console.log(
      `${tty ? '\n' : ''}   worker ${current}'s lease.signal aborted ${fmt(detection)} after the takeover ` +
        `(fencing token ${taken.fencingToken} > every earlier one)`,
    );
    await sleep(300);
    await taken.release();
    await sleep(1_500);

    const tokens = events.filter((e) => e.type === 'acquired').map((e) => BigInt(e.fencingToken ?? '0'));
    const increasing = tokens.every((t, i) => i === 0 || t > tokens[i - 1]!);
    console.log(`${tty ? '\n' : ''}\nSummary`);
    console.log(`  handoffs between processes   ${gaps.length}, median gap ${fmt(median(gaps))}`);
    console.log(`  crash recovery               ${fmt(recovery)} (holder's remaining TTL: ${remaining} ms)`);
    console.log(`  takeover detected after      ${fmt(detection)}`);
    console.log(`  fencing tokens               ${tokens.length} grants, strictly increasing: ${increasing}`);
    console.log(`\nRead more: ${DOCS}/getting-started.md`);
    return EXIT.ok;
  } finally {
    stopAll();
    await lh.close();
    // A server the demo did not start keeps nothing of it (its fencing counter, a killed
    // worker's lock): every key under its own prefix goes.
    if (redis.external) {
      const client = await rawClient(redis.url).catch(() => undefined);
      if (client !== undefined) {
        await removeKeys(client, prefix).catch(() => {});
        client.destroy();
      }
    }
  }
}

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function waitFor<T>(read: () => T | undefined, timeout = 5_000): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('the demo stalled: no worker holds the lock');
    await sleep(5);
  }
}

function waitForEvent(events: Event[], match: (e: Event) => boolean, timeout: number): Promise<Event> {
  return waitFor(() => events.find(match), timeout);
}

/** A plain client, to read the lock's remaining TTL the way an operator would. */
async function rawClient(url: string) {
  const { createClient } = await import('redis');
  const client = createClient({ url });
  await client.connect();
  return client;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  // The exit code says whether the demo ran (69: no Redis to run it on, as in the CLI).
  process.exitCode = await runDemo();
}
