import { LeaseholdError, RedisCommandError, RedisUnavailableError } from '../errors.ts';
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

/** Server-side refusals (a script error, a wrong type) versus "Redis did not answer". */
export function toLeaseholdError(error: unknown, operation: string): LeaseholdError {
  if (error instanceof LeaseholdError) return error;
  const cause = error instanceof Error ? error : new Error(String(error));
  // CROSSSLOT: keys of one call in different Cluster slots, a refusal no retry can change.
  if (/^(ERR|WRONGTYPE|NOSCRIPT|BUSY|READONLY|NOPERM|OOM|CROSSSLOT)/.test(cause.message)) {
    return new RedisCommandError(`${operation} failed: ${cause.message}${aclHint(cause.message)}`, { cause });
  }
  return new RedisUnavailableError(`${operation} failed: Redis did not answer (${cause.message})`, { cause });
}

/**
 * The per-call outcome of a pipelined batch of compare scripts that answer 1 (done) or 0 (this
 * token no longer holds the key): true, false, or the LeaseholdError of that call.
 */
export function toOutcomes(results: readonly unknown[], operation: string): (boolean | LeaseholdError)[] {
  return results.map((r) => (r instanceof Error ? toLeaseholdError(r, operation) : r === 1));
}
