import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { MIN_TTL } from '../base/clock.ts';
import { defaultOwner } from '../base/owner.ts';
import { after } from '../base/timer.ts';
import { LockTimeoutError, RedisUnavailableError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import { Leasehold } from '../leasehold.ts';
import { checkOwner, MAX_TTL } from '../options/index.ts';
import {
  type Connection,
  connection,
  connectionHelp,
  connectionOptions,
  lockName,
  printJson,
  refusedAccess,
  usage,
  usageError,
} from './common.ts';
import { WaitingDisplay } from './display.ts';
import { CliError, EXIT } from './exit.ts';
import { topologyHelp, topologyOptions } from './topology.ts';
import { duration, formatMs } from './values.ts';

export const runHelp = `Usage: leasehold run <name> [options] -- <command> [args...]

Runs <command> while holding the lock <name>, renewing the lease until the command exits,
then releases it. If the lock is lost meanwhile (deleted, taken over, expired while Redis
was unreachable), the command gets SIGTERM, then SIGKILL after --grace.
Signals sent to leasehold (INT, TERM, HUP, QUIT, USR1, USR2) are forwarded to the command.

Options:
  --ttl <ms>          lease validity, renewed every third of it: 12ms to 24d (default: 10000)
  --no-renew          do not renew: the lease ends at --ttl (the command gets SIGTERM then)
  --min-hold <ms>     keep the name taken this long after it was granted, also when the command
                      ends sooner (a job that must not run twice: docs/scheduled-jobs.md)
  --timeout <ms>      stop waiting after this long, or inf (default: wait as long as it takes)
  --wait              wait while another holder has the lock (the default)
  --no-wait           make one attempt; exit 75 at once when the lock is busy
  --grace <ms>        after a loss, time between SIGTERM and SIGKILL, or inf for no SIGKILL
                      (default: 5000)
  --owner <text>      who holds it, as inspection shows it (default: host:pid:leasehold run <command>)
${connectionHelp}

${topologyHelp}

  Durations accept a unit: 500ms, 10s, 2m, 1h, 2d (1.5h too).

The command's environment also has:
  LEASEHOLD_LOCK            the lock name
  LEASEHOLD_FENCING_TOKEN   this holder's fencing token: pass it to what the lock protects

Exit status: the command's own; 128+N when signal N ended it; 75 not acquired;
76 lock lost (command terminated, or never started); 69 Redis unreachable; 64 usage;
126/127 command not runnable.
With --json, leasehold's own events are JSON lines on stderr (stdout stays the command's).
`;

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;
type Forwarded = (typeof FORWARDED)[number];

const signalCode = (signal: NodeJS.Signals): number => 128 + (constants.signals[signal] ?? 0);

export async function run(argv: string[]): Promise<number> {
  const sep = argv.indexOf('--');
  const { values, positionals } = parseArgs({
    args: sep === -1 ? argv : argv.slice(0, sep),
    options: {
      ...connectionOptions,
      ttl: { type: 'string' },
      timeout: { type: 'string' },
      wait: { type: 'boolean' },
      'no-wait': { type: 'boolean' },
      'no-renew': { type: 'boolean' },
      'min-hold': { type: 'string' },
      grace: { type: 'string' },
      owner: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(runHelp);
    return EXIT.ok;
  }
  const name = lockName(positionals);
  if (sep !== -1 && positionals.length > 1) {
    throw new CliError(`unexpected ${JSON.stringify(positionals[1])} before --; put the command after --`);
  }
  const command = sep === -1 ? positionals.slice(1) : argv.slice(sep + 1);
  if (command.length === 0)
    throw new CliError('missing the command to run (leasehold run <name> -- <command>)');
  if (values.wait && values['no-wait']) throw new CliError('--wait and --no-wait exclude each other');
  // The library's bounds, in the CLI's words: `--ttl 2d` is fine, `--ttl 30d` is past MAX_TTL.
  const ttl = duration(values.ttl, 'ttl', 10_000, { min: MIN_TTL, max: MAX_TTL });
  const timeout = duration(values.timeout, 'timeout', Number.POSITIVE_INFINITY, { infinite: true });
  const grace = duration(values.grace, 'grace', 5_000, { infinite: true });
  const minHold = duration(values['min-hold'], 'min-hold', 0, { min: 0, max: MAX_TTL });
  const renew = values['no-renew'] !== true;
  if (values.owner !== undefined) usage(() => checkOwner(values.owner, '--owner'));
  const conn = connection(values);
  const json = values.json === true;
  const report = (event: string, fields: Record<string, unknown>, human: string | undefined) => {
    if (json) printJson({ event, name, ...fields }, process.stderr);
    else if (human !== undefined) process.stderr.write(`leasehold: ${human}\n`);
  };

  // What `leasehold top`, the dashboard and lh.inspect() show as the holder.
  const owner = values.owner ?? defaultOwner(`leasehold run ${command.join(' ')}`);
  const lh = await connect(conn, ttl, owner);
  try {
    const noWait = values['no-wait'] === true;
    const lease = await acquire(lh, name, { ttl, timeout, noWait, renew, minHold, json, report });
    if (typeof lease === 'number') return lease;
    return await supervise(lease, command, grace, report);
  } finally {
    await lh.close().catch(() => {});
  }
}

async function connect(conn: Connection, ttl: number, owner: string): Promise<Leasehold> {
  try {
    const { url, prefix, driver, tls, topology } = conn;
    return await Leasehold.connect({
      ...(topology.kind === 'redis' ? { url } : topologyOptions(topology)),
      prefix,
      ...(topology.kind === 'postgres' ? {} : { driver }),
      ttl,
      owner,
      ...(tls === undefined ? {} : { tls }),
    });
  } catch (error) {
    if (error instanceof TypeError) throw usageError(error);
    const message = (error as Error).message;
    throw new CliError(message, refusedAccess(message) ? EXIT.noPermission : EXIT.unavailable);
  }
}

type Report = (event: string, fields: Record<string, unknown>, human: string | undefined) => void;

/** The lease, or the exit code when none was acquired. */
async function acquire(
  lh: Leasehold,
  name: string,
  o: {
    ttl: number;
    timeout: number;
    noWait: boolean;
    renew: boolean;
    minHold: number;
    json: boolean;
    report: Report;
  },
): Promise<Lease | number> {
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => abort.abort(signal);
  for (const signal of FORWARDED) process.on(signal, onSignal);
  const display =
    !o.json && !o.noWait && process.stderr.isTTY
      ? new WaitingDisplay(process.stderr, (elapsed) => {
          const limit = Number.isFinite(o.timeout) ? ` of ${formatMs(o.timeout)}` : '';
          return `waiting for lock "${name}"… ${elapsed}${limit} (Ctrl-C to give up)`;
        })
      : undefined;
  try {
    const mode = { ttl: o.ttl, renew: o.renew, minHold: o.minHold };
    const lease = o.noWait
      ? await lh.tryAcquire(name, mode)
      : await lh.acquire(name, { ...mode, timeout: o.timeout, signal: abort.signal });
    display?.stop();
    if (lease === undefined) {
      o.report('not-acquired', { reason: 'busy' }, `lock "${name}" is held by another process (--no-wait)`);
      return EXIT.notAcquired;
    }
    const waited = display?.shown ? ` after ${display.elapsed}` : '';
    o.report(
      'acquired',
      { fencingToken: lease.fencingToken, ttl: o.ttl },
      display?.shown ? `acquired lock "${name}"${waited} (fencing token ${lease.fencingToken})` : undefined,
    );
    return lease;
  } catch (error) {
    display?.stop();
    if (abort.signal.aborted) {
      const signal = abort.signal.reason as NodeJS.Signals;
      o.report(
        'not-acquired',
        { reason: 'signal', signal },
        `gave up waiting for lock "${name}" (${signal})`,
      );
      return signalCode(signal);
    }
    if (error instanceof LockTimeoutError) {
      o.report(
        'not-acquired',
        { reason: 'timeout', timeout: o.timeout },
        `lock "${name}" not acquired within ${formatMs(o.timeout)}`,
      );
      return EXIT.notAcquired;
    }
    if (error instanceof RedisUnavailableError) throw new CliError(error.message, EXIT.unavailable);
    throw error;
  } finally {
    for (const signal of FORWARDED) process.off(signal, onSignal);
  }
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: NodeJS.ErrnoException;
}

async function supervise(lease: Lease, command: string[], grace: number, report: Report): Promise<number> {
  const [file, ...args] = command as [string, ...string[]];
  // Reading the signal checks the lease's validity: a lease whose validity ran out since it was
  // granted (a TTL of a few ms, a stalled machine) is lost now, and its signal aborted before any
  // listener could hear it. The command must not start without the lock.
  const leaseSignal = lease.signal;
  if (leaseSignal.aborted) {
    const reason = leaseSignal.reason as Error;
    report('lost', { error: reason.message, pid: null }, `${reason.message}; ${file} not started`);
    report('exit', { code: null, signal: null, lost: true, released: false }, undefined);
    return EXIT.lost;
  }
  const child: ChildProcess = spawn(file, args, {
    stdio: 'inherit',
    env: { ...process.env, LEASEHOLD_LOCK: lease.name, LEASEHOLD_FENCING_TOKEN: String(lease.fencingToken) },
  });
  const exited = new Promise<Outcome>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const forward = (signal: Forwarded) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of FORWARDED) process.on(signal, forward);

  let lost = false;
  let cancelKill: (() => void) | undefined;
  const onAbort = () => {
    if (lost || !lease.lost) return;
    lost = true;
    const reason = leaseSignal.reason as Error;
    report(
      'lost',
      { error: reason.message, pid: child.pid },
      `${reason.message}; sending SIGTERM to ${file} (pid ${child.pid}), ${grace === Number.POSITIVE_INFINITY ? 'no SIGKILL (--grace inf)' : `SIGKILL in ${formatMs(grace)}`}`,
    );
    forward('SIGTERM');
    // after(): --grace may be inf (never SIGKILL) or beyond setTimeout's 2^31-1 ms.
    cancelKill = after(grace, () => forward('SIGKILL' as Forwarded), { ref: true });
  };
  leaseSignal.addEventListener('abort', onAbort, { once: true });
  report('started', { pid: child.pid, command }, undefined);
  // Lost while the command was being spawned (spawn blocks for milliseconds): the event has
  // fired already, or fires now as reading `lost` checks the validity (onAbort acts once).
  if (lease.lost) onAbort();

  const outcome = await exited;
  cancelKill?.();
  leaseSignal.removeEventListener('abort', onAbort);
  for (const signal of FORWARDED) process.off(signal, forward);
  const released = await lease.release().catch((error: unknown) => {
    report('release-failed', { error: String(error) }, `could not release "${lease.name}": ${String(error)}`);
    return false;
  });
  if (outcome.error !== undefined) {
    const notFound = outcome.error.code === 'ENOENT';
    report('spawn-failed', { error: outcome.error.message }, `cannot run ${file}: ${outcome.error.message}`);
    return notFound ? EXIT.notFound : EXIT.cannotExecute;
  }
  const code = outcome.signal !== null ? signalCode(outcome.signal) : (outcome.code ?? EXIT.software);
  report('exit', { code: outcome.code, signal: outcome.signal, lost, released }, undefined);
  return lost ? EXIT.lost : code;
}
