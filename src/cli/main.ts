#!/usr/bin/env node
import { LeaseholdError } from '../errors.ts';
import { defaultUrl } from '../options/index.ts';
import { parseArgsMessage, refusedAccess, version } from './common.ts';
import { dashboard } from './dashboard.ts';
import { delegate, demo } from './delegate.ts';
import { doctor } from './doctor.ts';
import { CliError, DOCS, EXIT } from './exit.ts';
import { release, watch } from './inspect.ts';
import { migrate } from './migrate.ts';
import { run } from './run.ts';
import { status } from './status.ts';
import { top } from './top.ts';

const help = `leasehold ${version()}: distributed locks on Redis, from the command line

Usage: leasehold <command> [options]

Commands:
  run <name> -- <command...>   run a command while holding the lock <name>
  status <name>                who holds <name> (any primitive), who waits, TTLs, fencing tokens
  release --force <name>       free <name> whoever holds it, any primitive (the next in line gets in)
  watch <name>                 print every change to <name> as it happens
  top [<name-prefix>]          live view of every name under a prefix: holders, TTLs, waiters
  dashboard [<name-prefix>]    the same as a web page (127.0.0.1 by default), live over SSE
  doctor                       check a server: version, tracking rule, notification mode, round trip
  migrate --postgres <url>     create the table leasehold keeps in PostgreSQL (docs/postgres.md)
  demo                         a live demo: processes contend, the holder dies, the lock moves
  bench                        the benchmarks against peer libraries (source checkout)

Run \`leasehold <command> --help\` for a command's options. Redis: --redis <url>, else $REDIS_URL,
else redis://127.0.0.1:6379; PostgreSQL: --postgres <url>. Exit codes and more: ${DOCS}/cli.md
`;

const commands: Record<string, (argv: string[]) => Promise<number>> = {
  run,
  status,
  release,
  watch,
  top,
  dashboard,
  doctor,
  migrate,
  demo,
  bench: (argv) => delegate('bench', 'bench', argv),
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic !== undefined && commands[topic] !== undefined) return commands[topic](['--help']);
    process.stdout.write(help);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const handler = commands[command];
  if (handler === undefined) {
    process.stderr.write(`leasehold: unknown command "${command}"\n\n${help}`);
    return EXIT.usage;
  }
  // Every failure is printed through this: the URL's password, however a message came to hold
  // it, is masked (the messages redact URLs already; this is the net under them).
  const fail = (text: string) => process.stderr.write(`leasehold ${command}: ${mask(text, rest)}\n`);
  try {
    return await handler(rest);
  } catch (error) {
    if (error instanceof CliError) {
      fail(error.message);
      return error.exitCode;
    }
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      const message = parseArgsMessage(error as { code: string; message: string }, command);
      fail(`${message} (see --help)`);
      return EXIT.usage;
    }
    if (error instanceof LeaseholdError) {
      fail(`${error.message.replace('docs/security.md', `${DOCS}/security.md`)} [${error.code}]`);
      if (refusedAccess(error.message)) return EXIT.noPermission;
      return error.code === 'LEASEHOLD_ERR_REDIS_UNAVAILABLE' ? EXIT.unavailable : EXIT.software;
    }
    fail(`unexpected failure: ${(error as Error).stack ?? String(error)}`);
    return EXIT.software;
  }
}

/** `text` without the password of the Redis URL in use (--redis, else $REDIS_URL), in either spelling. */
function mask(text: string, argv: readonly string[]): string {
  const at = argv.findIndex((arg) => arg === '--redis' || arg.startsWith('--redis='));
  const url = at === -1 ? defaultUrl() : ((argv[at]?.split('=').slice(1).join('=') || argv[at + 1]) ?? '');
  let password = '';
  try {
    password = new URL(url).password;
  } catch {
    return text;
  }
  if (password === '') return text;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // a malformed escape: the raw form is what could be printed
  }
  return text.split(password).join('***').split(decoded).join('***');
}

// A reader that went away (`leasehold top --json | head`) is no crash: what is left to write is
// dropped, and the live views stop as on Ctrl-C (stopOnSignals).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
// Anything left open (a socket slow to close) must not keep a finished command alive.
setTimeout(() => process.exit(), 2_000).unref();
