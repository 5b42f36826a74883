/** Commands that name no key. */
const KEYLESS = new Set(['TIME', 'PING', 'PUBLISH', 'ECHO']);
/** Commands whose every argument is a key. */
const ALL_KEYS = new Set(['DEL', 'EXISTS', 'UNLINK', 'TOUCH']);

/**
 * The keys a command reads or writes, as Redis's key specs say for the commands leasehold's
 * scripts use (src/memory/commands.ts): none, every argument, or the first one.
 */
export function commandKeys(args: readonly string[]): string[] {
  const name = (args[0] ?? '').toUpperCase();
  if (KEYLESS.has(name)) return [];
  if (ALL_KEYS.has(name)) return args.slice(1);
  return args.length > 1 ? [args[1]!] : [];
}
