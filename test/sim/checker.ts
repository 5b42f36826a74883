// The invariants a simulation run checks after every step (test/sim/):
// 1. never more trusted holders than a primitive allows (one for a mutex, a fair lock or a writer,
//    no reader beside a writer, at most the limit of a semaphore's permits); trusted: not
//    aborted, not released, within its validity, in a process still running;
// 2. fencing tokens never go back: an exclusive lease's is above every token handed out before
//    it for that name, a reader's above every writer's, a permit's never seen before;
// 3. no name left unused beyond the strand bound while a live waiter waits for it (unused: free,
//    or held only under values a grant set that no caller was handed and no command claimed, or
//    under values of waits that ended without them, by a live process that owes them back);
// 4. a wait that has ended never sends an attempt again;
// 5. at the end, with every fault healed: every wait settled, no waiter state left in any live
//    process (waiting, grant waiters, give-backs), and no registration left in Redis for one.
import type { Lease, Leasehold } from '../../src/index.ts';
import { SortedSet } from '../../src/memory/zset.ts';
import type { SimProcess, SimServer } from './network.ts';
import {
  type Ask,
  firstInLine,
  holdersOnServer,
  SEMAPHORE_LIMIT,
  type Target,
  waiterKeys,
  waitingWriters,
} from './targets.ts';

export interface Wait {
  readonly process: SimProcess;
  readonly who: string;
  readonly ask: Ask;
  readonly startedAt: number;
  settled: boolean;
  /** The stored values its attempts sent (one, for a wait Redis keeps). */
  readonly values: Set<string>;
}

interface Handed {
  readonly lease: Lease;
  readonly process: SimProcess;
  readonly ask: Ask;
  released: boolean;
}

export interface CheckerInit {
  server: SimServer;
  processes: readonly SimProcess[];
  targets: readonly Target[];
  say(text: string): void;
  strandBound: number;
}

interface Script {
  script: { name: string };
  keys: readonly string[];
  args: readonly string[];
}

/** Scripts that ask for a lease: a wait that has ended must never send one again. */
const ASKS =
  /^(acquire|acquire-recorded|semaphore-acquire|fair-acquire|rwlock-read|rwlock-write|election-campaign|multi-acquire)$/;

const ownerOf = (value: string) => value.slice(value.lastIndexOf('~') + 1);

export class Checker {
  readonly violations: string[] = [];
  handedOut = 0;
  timeouts = 0;
  readonly #init: CheckerInit;
  readonly #waits = new Set<Wait>();
  /** The wait each caller is in now. */
  readonly #current = new Map<string, Wait>();
  /** Stored values of waits that ended, with the caller and when. */
  readonly #ended = new Map<string, string>();
  /** Leases handed to callers and not yet done with, by stored value. */
  readonly #handed = new Map<string, Handed>();
  /** Every value ever handed to a caller: a key holding one is its holder's until released there. */
  readonly #everHanded = new Set<string>();
  /** Stored values a grant set (PUBLISH on a grant channel named them). */
  readonly #granted = new Set<string>();
  /**
   * Values whose own command took or kept a key on the server (an acquisition, or an attempt or
   * extension that found its grant and claimed it): that waiter's acquisition from then on, even
   * if its process has not read the reply yet (a reply on its way to a process that paused).
   */
  readonly #claimed = new Set<string>();
  /** Per name: the highest token handed out, the highest exclusive one, and every permit's. */
  readonly #fences = new Map<string, { max: bigint; exclusive: bigint; seen: Set<bigint> }>();
  /** Per name: since when it has been unused while a live waiter waited. */
  readonly #strandSince = new Map<string, number>();

  constructor(init: CheckerInit) {
    this.#init = init;
  }

  fail(text: string): void {
    const line = `at ${performance.now().toFixed(1)} ms: ${text}`;
    this.violations.push(line);
    this.#init.say(`VIOLATION ${line}`);
  }

  /** Learns which values grants set, from the server's PUBLISH (a grant message ends with the value). */
  watchGrants(): void {
    const server = this.#init.server;
    const publish = server.publish.bind(server);
    server.publish = (channel: string, text: string) => {
      const reached = publish(channel, text);
      if (channel.includes(':grants:')) {
        const stored = text.slice(text.lastIndexOf('\n') + 1);
        this.#granted.add(stored);
        this.#init.say(`grant to ${ownerOf(stored)} (${reached} listening)`);
      }
      return reached;
    };
  }

  waitStarted(process: SimProcess, who: string, ask: Ask): Wait {
    const wait = {
      process,
      who,
      ask,
      startedAt: performance.now(),
      settled: false,
      values: new Set<string>(),
    };
    this.#waits.add(wait);
    this.#current.set(who, wait);
    return wait;
  }

  /** Scripts a process sends now: an attempt under a value whose wait ended is a violation. */
  sent(calls: readonly Script[]): void {
    for (const call of calls) {
      if (!ASKS.test(call.script.name)) continue;
      const stored = call.args[0] ?? '';
      this.#init.say(`${ownerOf(stored)} sends ${call.script.name} ${call.keys[0] ?? ''}`);
      const ended = this.#ended.get(stored);
      if (ended !== undefined) this.fail(`${ended}, yet ${call.script.name} was sent under its value`);
      const wait = this.#current.get(ownerOf(stored));
      if (wait !== undefined && !wait.settled) wait.values.add(stored);
    }
  }

  /** Scripts the server ran, with their replies: which values took or kept a key. */
  ran(calls: readonly Script[], replies: readonly unknown[]): void {
    for (const [i, call] of calls.entries()) {
      const reply = replies[i];
      const ok = Array.isArray(reply) ? reply[0] === 1 : reply === 1;
      if (ASKS.test(call.script.name))
        this.#init.say(`  ${ownerOf(call.args[0] ?? '')} ${call.script.name} -> ${JSON.stringify(reply)}`);
      if (ok && (ASKS.test(call.script.name) || /extend/.test(call.script.name))) {
        this.#claimed.add(call.args[0] ?? '');
      }
    }
  }

  waitEnded(wait: Wait, lease: Lease | undefined, error: unknown): void {
    wait.settled = true;
    this.#waits.delete(wait);
    const at = performance.now().toFixed(1);
    for (const value of wait.values) {
      if (value !== lease?.stored)
        this.#ended.set(value, `${wait.who}'s wait for ${wait.ask.target.name} ended at ${at} ms`);
    }
    if (lease === undefined) {
      if (error !== undefined && String(error).includes('LockTimeout')) this.timeouts += 1;
      return;
    }
    this.handedOut += 1;
    this.#checkFence(wait, lease.fencingToken);
    this.#handed.set(lease.stored, { lease, process: wait.process, ask: wait.ask, released: false });
    this.#everHanded.add(lease.stored);
  }

  releasing(lease: Lease): void {
    const handed = this.#handed.get(lease.stored);
    if (handed !== undefined) handed.released = true;
  }

  /** After every step. */
  step(): void {
    const now = performance.now();
    const trusted = new Map<string, Handed[]>();
    for (const [stored, handed] of this.#handed) {
      const lease = handed.lease;
      if (handed.released && lease.signal.aborted) this.#handed.delete(stored);
      // Released (or being released): its caller no longer counts on it.
      if (lease.signal.aborted || handed.released || handed.process.crashed || now >= lease.validUntil)
        continue;
      const list = trusted.get(lease.name) ?? [];
      list.push(handed);
      trusted.set(lease.name, list);
    }
    for (const target of this.#init.targets) {
      const list = trusted.get(target.name) ?? [];
      this.#checkExclusion(target, list);
      this.#strand(target, now, list);
    }
  }

  #checkExclusion(target: Target, list: readonly Handed[]): void {
    const who = () =>
      list.map((h) => `${ownerOf(h.lease.stored)} ${h.ask.role} #${h.lease.fencingToken}`).join(', ');
    if (target.kind === 'semaphore') {
      const permits = list.reduce((sum, h) => sum + h.ask.permits, 0);
      if (permits > SEMAPHORE_LIMIT)
        this.fail(`${permits} permits of ${target.name} trusted at once: ${who()}`);
      return;
    }
    const readers = list.filter((h) => h.ask.role === 'read').length;
    const exclusive = list.length - readers;
    if (exclusive > 1 || (exclusive === 1 && readers > 0))
      this.fail(`trusted holders of ${target.name} at once: ${who()}`);
  }

  #checkFence(wait: Wait, token: bigint): void {
    const { name } = wait.ask.target;
    const role = wait.ask.role;
    const f = this.#fences.get(name) ?? { max: 0n, exclusive: 0n, seen: new Set<bigint>() };
    this.#fences.set(name, f);
    const floor = role === 'read' ? f.exclusive : role === 'permits' ? -1n : f.max;
    if (token <= floor || f.seen.has(token)) {
      this.fail(`${wait.who} was handed ${name} (${role}) #${token}, not above #${floor} or seen before`);
    }
    f.seen.add(token);
    if (token > f.max) f.max = token;
    if (role !== 'read' && role !== 'permits' && token > f.exclusive) f.exclusive = token;
  }

  /** Invariant 3 for `target`. */
  #strand(target: Target, now: number, trusted: readonly Handed[]): void {
    const { name } = target;
    let used = 0;
    for (const [value, permits] of holdersOnServer(this.#init.server, target)) {
      const unclaimedGrant =
        this.#granted.has(value) && !this.#everHanded.has(value) && !this.#claimed.has(value);
      if (!unclaimedGrant && !this.#orphan(value)) used += permits;
    }
    let free =
      target.kind === 'semaphore' ? SEMAPHORE_LIMIT - used : trusted.length === 0 && used === 0 ? 1 : 0;
    // A fair lock serves its line in order: a first in line that cannot take its turn (paused,
    // crashed) keeps its place until its deadline by contract, and nobody behind it is stranded.
    const head = firstInLine(this.#init.server, target);
    const owner = head === undefined ? undefined : ownerOf(head).split('.')[0];
    const first = this.#init.processes.find((p) => p.owner === owner);
    if (first !== undefined && !live_(first)) free = 0;
    // So does a read-write lock's writer preference: waiting writers that cannot take their turn
    // keep readers out until their registrations lapse (docs/rwlock.md). A live one takes the
    // lock on its own next attempt, as does a live writer that waits: readers are kept out by
    // contract only while every registered waiting writer is paused, cut off or gone.
    const writers = waitingWriters(this.#init.server, target).map((value) => {
      const process = ownerOf(value).split('.')[0];
      return this.#init.processes.find((p) => p.owner === process);
    });
    const readersOut = writers.length > 0 && writers.every((p) => p !== undefined && !live_(p));
    const live = [...this.#waits].some(
      (w) =>
        w.ask.target.name === name &&
        live_(w.process) &&
        !(readersOut && w.ask.role === 'read') &&
        (target.kind !== 'semaphore' || w.ask.permits <= free),
    );
    if (free <= 0 || !live) {
      this.#strandSince.delete(name);
      return;
    }
    const since = this.#strandSince.get(name);
    if (since === undefined) {
      this.#strandSince.set(name, now);
      return;
    }
    if (now - since > this.#init.strandBound) {
      const held =
        [...holdersOnServer(this.#init.server, target)].map(([v, n]) => `${ownerOf(v)} x${n}`).join(', ') ||
        'nobody';
      const line = firstInLine(this.#init.server, target);
      if (line !== undefined) this.#init.say(`first in line: ${ownerOf(line)}`);
      const who = [...this.#waits]
        .filter((w) => w.ask.target.name === name)
        .map((w) => `${w.who}(${w.ask.permits})`);
      this.#init.say(`waiting for ${name}: ${who.join(', ')}; free ${free}`);
      this.fail(
        `${name} (${target.kind}) unused for ${Math.round(now - since)} ms while a live waiter waits (on the server: ${held})`,
      );
      this.#strandSince.delete(name);
    }
  }

  /**
   * Held under the value of a wait that ended without being handed it (an attempt answered after
   * its caller timed out or gave up), by a live process: that process owes the key back at once.
   */
  #orphan(value: string): boolean {
    if (!this.#ended.has(value) || this.#everHanded.has(value)) return false;
    const owner = ownerOf(value).split('.')[0];
    const process = this.#init.processes.find((p) => p.owner === owner);
    return process !== undefined && live_(process);
  }

  /** Invariant 5, once the run has settled. */
  finish(instances: readonly Leasehold[]): void {
    for (const wait of this.#waits) {
      if (!wait.process.crashed) this.fail(`${wait.who}'s wait for ${wait.ask.target.name} never settled`);
    }
    const { processes, server, targets } = this.#init;
    for (const [i, lh] of instances.entries()) {
      const process = processes[i]!;
      if (process.crashed) continue;
      const { waiting, grantWaiters, pendingReleases } = lh.stats;
      if (waiting !== 0 || grantWaiters !== 0 || pendingReleases !== 0) {
        this.fail(
          `${process.owner} kept waiter state after every wait ended: waiting ${waiting}, grant waiters ${grantWaiters}, pending give-backs ${pendingReleases}`,
        );
      }
    }
    const crashed = new Set(processes.filter((p) => p.crashed).map((p) => p.owner));
    const now = performance.now() + server.offset;
    for (const target of targets) {
      for (const key of waiterKeys(target)) {
        const entry = server.entry(key);
        if (entry === undefined || (entry.expiresAt !== undefined && entry.expiresAt <= now)) continue;
        // A grant's receipt ("=<fence>...") is not a waiter: it expires with its hash.
        const left =
          entry.value instanceof Map
            ? [...entry.value].filter(([, record]) => !record.startsWith('=')).map(([member]) => member)
            : entry.value instanceof SortedSet
              ? entry.value.range(0, -1).map((item) => item.member)
              : [];
        const mine = left.filter((m) => !crashed.has(ownerOf(m).split('.')[0] ?? ''));
        if (mine.length > 0) this.fail(`${key} still lists ${mine.join(', ')} after every wait ended`);
      }
    }
  }
}

function live_(process: SimProcess): boolean {
  if (!process.healthy) return false;
  for (const driver of process.drivers) {
    if (!driver.connected || driver.link?.blackhole) return false;
    for (const sub of driver.subscriptions) if (!sub.up) return false;
  }
  return true;
}
