// The faults a simulation run injects (test/sim/), at seeded times while the processes work: what
// production does to a lock service's clients. Each heals by itself, except a crash.
import type { SimProcess, SimServer } from './network.ts';
import type { Random } from './random.ts';

export interface FaultInit {
  processes: readonly SimProcess[];
  server: SimServer;
  random: Random;
  /** No fault starts after this (virtual ms); the run then heals and settles. */
  end: number;
  /** Only these kinds (FAULTS' names), more of them: a run aimed at one kind of fault. */
  only?: readonly string[] | undefined;
  say(text: string): void;
}

type Fault = (init: FaultInit, process: SimProcess) => void;

const later = (ms: number, fn: () => void) => setTimeout(fn, ms);

/**
 * A process stops (a long GC, SIGSTOP, a frozen VM): it sends and hears nothing, while the
 * server still counts its connections and subscriptions.
 */
const pause: Fault = ({ random, say }, p) => {
  if (p.paused || p.crashed) return;
  const ms = random.pick([random.int(50, 400), random.int(400, 3_000), random.int(3_000, 8_000)]);
  p.paused = true;
  say(`fault: ${p.owner} paused for ${ms} ms`);
  later(ms, () => {
    say(`fault: ${p.owner} resumes`);
    p.resume();
  });
};

/** The server closes a process's command connection (CLIENT KILL, a proxy restart). */
const killCommands: Fault = ({ random, say }, p) => {
  const driver = random.pick(p.drivers);
  if (driver === undefined || !driver.connected) return;
  say(`fault: ${p.owner}'s command connection killed`);
  driver.kill();
};

/**
 * A process's subscription connection drops, with whatever messages were on their way on it
 * (a grant published the moment before is lost).
 */
const killSubscription: Fault = ({ random, say }, p) => {
  const subs = p.drivers.flatMap((d) => [...d.subscriptions]);
  const sub = subs.length === 0 ? undefined : random.pick(subs);
  if (sub === undefined || sub.link === undefined) return;
  say(`fault: ${p.owner}'s subscription dropped`);
  sub.kill();
};

/**
 * A connection black-holes (a NAT or firewall drops the flow): nothing crosses; the command
 * connection's watchdog gives it up after commandTimeout, a subscription's drop is noticed only
 * when the flow comes back as a reset (`ms` later).
 */
const blackhole: Fault = ({ random, say }, p) => {
  const driver = random.pick(p.drivers);
  if (driver === undefined) return;
  const subs = [...driver.subscriptions];
  const onSub = subs.length > 0 && random.chance(0.5);
  const sub = onSub ? random.pick(subs) : undefined;
  const link = sub === undefined ? driver.link : sub.link;
  if (link === undefined || !link.healthy) return;
  const ms = random.int(100, 3_000);
  link.blackhole = true;
  say(`fault: ${link} black-holed for ${ms} ms`);
  later(ms, () => {
    link.blackhole = false;
    if (sub !== undefined && sub.link === link) sub.kill();
  });
};

/**
 * A process dies where the server does not notice (a host crash: no FIN, tcp-keepalive 300 s):
 * its connections stay counted, its leases stay until their TTL.
 */
const crash: Fault = ({ processes, say }, p) => {
  if (p.crashed || processes.filter((q) => !q.crashed).length <= 2) return;
  p.crashed = true;
  say(`fault: ${p.owner} crashed`);
};

/** The server's wall clock steps (NTP after a VM resume, a wrong RTC): TTLs run on it. */
const clockStep: Fault = ({ server, random, say }) => {
  const ms = random.pick([-5_000, -500, 200, 1_000]);
  server.offset += ms;
  say(`fault: server clock stepped ${ms > 0 ? '+' : ''}${ms} ms`);
};

const ALL: { name: string; fault: Fault; weight: number }[] = [
  { name: 'pause', fault: pause, weight: 4 },
  { name: 'kill', fault: killCommands, weight: 2 },
  { name: 'subscription', fault: killSubscription, weight: 3 },
  { name: 'blackhole', fault: blackhole, weight: 3 },
  { name: 'crash', fault: crash, weight: 1 },
  { name: 'clock', fault: clockStep, weight: 0 },
];

export const FAULT_KINDS = ALL.map((f) => f.name);

/** Schedules this run's faults: a seeded handful, at seeded times, on seeded processes. */
export function scheduleFaults(init: FaultInit): void {
  const { random, processes, end, only } = init;
  const FAULTS =
    only === undefined ? ALL : ALL.filter((f) => only.includes(f.name)).map((f) => ({ ...f, weight: 1 }));
  const total = FAULTS.reduce((sum, f) => sum + f.weight, 0);
  const count = only === undefined ? random.int(0, 8) : random.int(5, 30);
  const now = performance.now();
  for (let i = 0; i < count; i++) {
    const at = random.int(0, Math.max(0, end - now));
    let roll = random.float() * total;
    let fault = FAULTS[0]!.fault;
    for (const f of FAULTS) {
      roll -= f.weight;
      if (roll < 0) {
        fault = f.fault;
        break;
      }
    }
    const process = random.pick(processes);
    later(at, () => fault(init, process));
  }
}
