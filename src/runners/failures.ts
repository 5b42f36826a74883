import {
  LeaseholdError,
  RedisCommandError,
  RedisUnavailableError,
  ScriptingUnavailableError,
} from '../errors.ts';
import { commandAt } from '../scripts/index.ts';

/**
 * What an ACL refusal lacks, in words: Redis 7.0 does not name the command a script was refused
 * ("can't run this command or subcommand script: <sha>, on @user_script:<line>"), but the script's
 * line does. Empty for any other error.
 */
export function aclHint(message: string): string {
  if (!/NOPERM|ACL failure|can't run this command|can't access at least one of the keys/i.test(message))
    return '';
  const guide = 'docs/security.md lists the permissions leasehold needs';
  if (/\bkeys?\b|channel/i.test(message) && !/command/i.test(message)) {
    return ` (the ACL user's key and channel patterns must cover leasehold's keys; ${guide})`;
  }
  const at = /script: ([0-9a-f]{40}), on @user_script:(\d+)/.exec(message);
  const command =
    /'([a-z|-]+)' command/i.exec(message)?.[1]?.toLowerCase() ??
    (at === null ? undefined : commandAt(at[1] ?? '', Number(at[2])));
  return command === undefined
    ? ` (the ACL user lacks a command; ${guide})`
    : ` (the ACL user lacks +${command}; ${guide})`;
}

/**
 * The server an error came from, for its message: a driver of another server tags its errors
 * (the PostgreSQL driver: src/postgres/calls.ts `fromPostgres`), so that they speak of it.
 */
const serverOf = (error: Error): string => {
  const server = (error as { server?: unknown }).server;
  return typeof server === 'string' ? server : 'Redis';
};

/**
 * What a server that cannot run scripts says, in words with what to do; undefined for any other
 * error. `EVALSHA` unknown: Lua left out (Valkey 9.1's Lua module not loaded) or the command renamed
 * away; NOPERM on it: an ACL that denies scripts.
 */
export function scriptingRefusal(message: string): string | undefined {
  // The server's words without the arguments it echoes (a SHA1 and keys).
  const said = message.split('\n')[0]?.split(', with args')[0];
  if (/unknown command [`'"]?(eval|evalsha|script)\b/i.test(message)) {
    return (
      `the server cannot run Lua scripts (${said}), and every leasehold operation is one: ` +
      "on Valkey 9.1 and later load its Lua module (the 'loadmodule' directive, with the path your package installs it at), " +
      'elsewhere restore EVAL and EVALSHA (docs/compatibility.md)'
    );
  }
  if (/NOPERM.*'(eval|evalsha|script\|load)' command/i.test(message)) {
    return (
      `the ACL user may not run scripts (${said}), and every leasehold operation is one: ` +
      'grant +eval +evalsha +script|load (docs/security.md)'
    );
  }
  return undefined;
}

/** Server-side refusals (a script error, a wrong type) versus "Redis did not answer". */
export function toLeaseholdError(error: unknown, operation: string): LeaseholdError {
  if (error instanceof LeaseholdError) return error;
  const cause = error instanceof Error ? error : new Error(String(error));
  const scripting = scriptingRefusal(cause.message);
  if (scripting !== undefined)
    return new ScriptingUnavailableError(`${operation} failed: ${scripting}`, { cause });
  // CROSSSLOT: keys of one call in different Cluster slots, a refusal no retry can change.
  if (/^(ERR|WRONGTYPE|NOSCRIPT|BUSY|READONLY|NOPERM|OOM|CROSSSLOT)/.test(cause.message)) {
    return new RedisCommandError(`${operation} failed: ${cause.message}${aclHint(cause.message)}`, { cause });
  }
  return new RedisUnavailableError(
    `${operation} failed: ${serverOf(cause)} did not answer (${cause.message})`,
    {
      cause,
    },
  );
}

/**
 * The per-call outcome of a pipelined batch of compare scripts that answer 1 (done) or 0 (this
 * token no longer holds the key): true, false, or the LeaseholdError of that call.
 */
export function toOutcomes(results: readonly unknown[], operation: string): (boolean | LeaseholdError)[] {
  return results.map((r) => (r instanceof Error ? toLeaseholdError(r, operation) : r === 1));
}
