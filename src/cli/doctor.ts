import { parseArgs } from 'node:util';
import { monotonic } from '../base/clock.ts';
import { redact } from '../base/redact.ts';
import type { Driver, TrackingProof } from '../driver/types.ts';
import { scriptingRefusal } from '../runners/failures.ts';
import { connection, connectionHelp, connectionOptions, openDriver, printJson } from './common.ts';
import { DOCS, EXIT } from './exit.ts';
import {
  classifyService,
  engineOf,
  type ModeFacts,
  modeLine,
  parseInfo,
  type ServiceClass,
  serviceNotes,
} from './service-class.ts';
import { oneRedisOnly } from './targets.ts';
import { formatMs } from './values.ts';

export const doctorHelp = `Usage: leasehold doctor [options]

Checks what leasehold gets from a Redis (or Valkey) server, the way Leasehold.connect() does:
runs the notification canary (a script reads a key, another connection deletes it, the
invalidation push must arrive), and reports the server version, the managed service it detects
(from the host name, INFO and the errors met; one it cannot tell from a server of your own is
said to be one), the tracking rule the server follows, the mode an instance would run in there,
what the service's documentation says that matters to leasehold, and the round-trip time.

Exit status: 0 when notifications are proven (instances run in tracking mode), 78 when they
are not (instances with notifications: 'auto' poll; 'tracking' would refuse to connect) or
the server cannot run scripts at all (no Lua, or an ACL denies EVAL), 69 when Redis cannot be
reached.

${connectionHelp}
`;

/** Exit code when pushes cannot be proven (sysexits EX_CONFIG: the path to Redis is the cause). */
const EXIT_POLLING = 78;

const RULES = {
  'declared-keys': 'a script arms every key it declares (Redis <= 7.0)',
  'read-keys': 'a script arms only the keys it reads (Redis >= 7.2, Redis 8, Valkey)',
} as const;

export interface DoctorReport {
  url: string;
  driver: string;
  server: string;
  /** The service detected (docs/compatibility.md, "Managed services and other servers"). */
  service: ServiceClass;
  roundTripMs: number;
  notifications: 'tracking' | 'polling';
  trackingRule: keyof typeof RULES | null;
  canaryMs: number | null;
  reason: string | null;
  /** What an instance would run in there: notification mode, how pushes travel, scripts, grants. */
  mode: string;
  /** What the service's documentation says that matters here, one line each. */
  notes: string[];
  /** Why the server cannot run leasehold's scripts (no Lua, an ACL), or null when it can. */
  scripting: string | null;
}

export async function doctor(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: connectionOptions, allowPositionals: false });
  if (values.help) {
    process.stdout.write(doctorHelp);
    return EXIT.ok;
  }
  const conn = connection(values);
  oneRedisOnly(conn, 'doctor');
  const driver = await openDriver(conn, true);
  try {
    const report = await examine(driver, conn.url, conn.driver);
    if (values.json) printJson(report);
    else process.stdout.write(describe(report));
    return report.notifications === 'tracking' && report.scripting === null ? EXIT.ok : EXIT_POLLING;
  } finally {
    await driver.close();
  }
}

async function examine(driver: Driver, url: string, driverName: string): Promise<DoctorReport> {
  const info = parseInfo(String(await driver.command(['INFO', 'server'])));
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = monotonic();
    await driver.command(['PING']);
    times.push(monotonic() - started);
  }
  times.sort((a, b) => a - b);
  const proof: TrackingProof | undefined = driver.proof;
  const reason = proof?.reason?.message ?? (proof === undefined ? 'no canary ran' : null);
  const facts: ModeFacts = {
    driver: driverName,
    notifications: proof?.ok === true ? 'tracking' : 'polling',
    trackingRule: proof?.rule ?? null,
    reason,
  };
  // Scripts at all: a server without its Lua module, or an ACL without EVAL (leasehold cannot work there).
  const scripting = await driver.command(['EVAL', 'return 1', '0']).then(
    () => null,
    (error: unknown) => scriptingRefusal(error instanceof Error ? error.message : String(error)) ?? null,
  );
  const service = classifyService({ host: hostOf(url), info, errors: reason === null ? [] : [reason] });
  const engine = engineOf(info);
  return {
    url: redact(url),
    driver: driverName,
    server: `${engine.product} ${engine.version}`,
    service,
    roundTripMs: round(times[2] ?? 0),
    notifications: facts.notifications,
    trackingRule: facts.trackingRule,
    canaryMs: proof?.ms === undefined ? null : round(proof.ms),
    reason,
    mode: modeLine(facts),
    notes: serviceNotes(service, info, facts),
    scripting,
  };
}

/** The host of the URL connected to ('' when it does not parse: the service then comes from INFO alone). */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '';
  }
}

function describe(r: DoctorReport): string {
  const lines = [
    `leasehold doctor: ${r.url}`,
    `  server         ${r.server}`,
    `  service        ${r.service.name} (${r.service.detectedBy})`,
    `  driver         ${r.driver}`,
    `  round trip     ${fine(r.roundTripMs)} (median of 5 PINGs)`,
    r.trackingRule === null
      ? '  tracking rule  unknown (no push arrived)'
      : `  tracking rule  ${r.trackingRule}: ${RULES[r.trackingRule]}`,
    r.notifications === 'tracking'
      ? `  notifications  tracking: the canary's push arrived ${fine(r.canaryMs ?? 0)} after its script; holders and waiters hear of changes at once`
      : `  notifications  polling: ${r.reason}. Instances with notifications: 'auto' poll every retryDelay; 'tracking' refuses to connect (${DOCS}/compatibility.md)`,
    ...(r.scripting === null ? [] : [`  scripting      unavailable: ${r.scripting}`]),
    `  mode           ${r.mode}`,
    ...r.notes.map((note) => `  note           ${note}`),
  ];
  return `${lines.join('\n')}\n`;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
/** Sub-millisecond figures matter here (a local round trip is about 0.1 ms). */
const fine = (ms: number) => (ms < 10 ? `${ms.toFixed(2)} ms` : formatMs(ms));
