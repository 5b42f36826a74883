// The simulated network between Leasehold instances and one in-memory server (test/sim/). Every
// request, reply, invalidation push and pub/sub message crosses a Link: one TCP connection, FIFO in
// each direction, with a seeded delay per message, that can be killed (both ends learn at once),
// black-holed (nothing crosses until the client's watchdog gives the connection up), or frozen
// with its process (a paused process sends and hears nothing until it resumes, while the server
// still counts its subscriptions). The server runs the library's own Lua through the memory
// backend, as one Redis would, one script at a time.
import type { Driver, ScriptCall } from '../../src/driver/types.ts';
import { MemoryBackend, type StoreClock } from '../../src/memory/backend.ts';
import type { LuaScripts } from '../../src/memory/lua.ts';
import { SimDriver } from './driver.ts';
import type { Random } from './random.ts';

/** What the network needs of the world around it. */
export interface Net {
  readonly random: Random;
  readonly lua: LuaScripts;
  /** One-way delay of the next message, ms. */
  delay(): number;
  /** Whether the next pub/sub message arrives twice (a Cluster fans messages out). */
  duplicate(): boolean;
  /** A process sends these scripts now (the checker sees what a wait sends, and when). */
  sent(calls: readonly ScriptCall[]): void;
  /** The server ran these scripts, with these replies (an Error where one failed). */
  ran(calls: readonly ScriptCall[], replies: readonly unknown[]): void;
  log(text: string): void;
}

/** One simulated process: what freezes or ends every connection it has. */
export class SimProcess {
  readonly id: number;
  readonly owner: string;
  paused = false;
  crashed = false;
  readonly links = new Set<Link>();
  readonly drivers: SimDriver[] = [];
  /** Messages that reached the process while it was paused, in order. */
  readonly #held: (() => void)[] = [];

  constructor(id: number) {
    this.id = id;
    this.owner = `p${id}`;
  }

  get healthy(): boolean {
    return !this.paused && !this.crashed;
  }

  hold(fn: () => void): void {
    this.#held.push(fn);
  }

  resume(): void {
    this.paused = false;
    for (const fn of this.#held.splice(0)) fn();
  }
}

/** One connection: FIFO each way, delays from the world, killable, black-holable. */
export class Link {
  readonly process: SimProcess;
  readonly #net: Net;
  readonly #label: string;
  alive = true;
  /** Nothing crosses either way (a network that drops packets while the connection stays open). */
  blackhole = false;
  /** The server closed its end (CLIENT KILL, a restart): late requests on it do not run. */
  serverClosed = false;
  #toServerAt = 0;
  #toClientAt = 0;

  constructor(net: Net, process: SimProcess, label: string) {
    this.#net = net;
    this.process = process;
    this.#label = label;
    process.links.add(this);
  }

  get healthy(): boolean {
    return this.alive && !this.blackhole;
  }

  /** Client to server: `fn` runs on the server, in send order, unless lost on the way. */
  toServer(fn: () => void): void {
    const send = () => {
      if (!this.alive || this.blackhole || this.process.crashed) return;
      const at = Math.max(performance.now() + this.#net.delay(), this.#toServerAt);
      this.#toServerAt = at;
      setTimeout(() => {
        if (!this.serverClosed) fn();
      }, at - performance.now());
    };
    if (this.process.paused) this.process.hold(send);
    else send();
  }

  /** Server to client: `fn` runs in the client, in order, unless the connection died or is black-holed. */
  toClient(fn: () => void): void {
    if (this.blackhole || this.serverClosed) return;
    const at = Math.max(performance.now() + this.#net.delay(), this.#toClientAt);
    this.#toClientAt = at;
    setTimeout(() => {
      const arrive = () => {
        if (this.alive && !this.process.crashed) fn();
      };
      if (this.process.paused) this.process.hold(arrive);
      else arrive();
    }, at - performance.now());
  }

  close(): void {
    this.alive = false;
    this.process.links.delete(this);
  }

  toString(): string {
    return `${this.process.owner}/${this.#label}`;
  }
}

/** The simulated server: a memory backend whose clock can be stepped, handing out SimDrivers. */
export class SimServer extends MemoryBackend {
  readonly net: Net;
  /** Added to the server's wall clock (what TIME reads and PXAT means); TTLs run on it too. */
  offset = 0;
  #connecting: SimProcess | undefined;
  readonly commandTimeout: number;

  constructor(net: Net, commandTimeout: number) {
    const clock: StoreClock = {
      now: () => performance.now() + this.offset,
      at: (epochMs) => epochMs - SimServer.EPOCH,
      micros: () => Math.floor((SimServer.EPOCH + performance.now() + this.offset) * 1000),
    };
    super({ clock, timers: true });
    this.net = net;
    this.commandTimeout = commandTimeout;
  }

  /** Wall-clock time at virtual 0 (a fixed date: replays must not depend on today). */
  static readonly EPOCH = Date.UTC(2026, 10, 28);

  /** The next connect() is `process`'s. */
  connecting(process: SimProcess): void {
    this.#connecting = process;
  }

  override driver(tracking: boolean): Driver {
    const process = this.#connecting;
    if (process === undefined) throw new Error('SimServer: connecting() names the process first');
    const driver = new SimDriver(this, process, tracking);
    process.drivers.push(driver);
    return driver;
  }
}
