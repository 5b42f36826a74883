import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** A Lua script and its SHA1, sent as EVALSHA with an EVAL fallback on NOSCRIPT. */
export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

const registry: Script[] = [];

/**
 * A line `--- @include "<name>"` stands for the text of `includes/<name>.lua` (bullmq's
 * convention). Includes may include others; each is expanded once per script, where it first
 * appears (next-fence and raise-fence both start with `idle`, which defines IDLE_MS, and
 * `fence-mark`).
 */
const INCLUDE = /^--- @include "([\w-]+)"$/gm;

/**
 * The source of `src/scripts/<name>.lua` (copied next to the compiled file by the build), its
 * includes expanded: what Redis runs and what its SHA1 is taken of.
 */
export function scriptSource(name: string): string {
  const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
  const included = new Set<string>();
  const expand = (text: string): string =>
    text.replace(INCLUDE, (_, include: string) => {
      if (included.has(include)) return '';
      included.add(include);
      return expand(read(`./includes/${include}.lua`).trimEnd());
    });
  return expand(read(`./${name}.lua`));
}

/** Loads `src/scripts/<name>.lua` and registers it for preloadScripts. */
export function loadScript(name: string): Script {
  const source = scriptSource(name);
  const script = { name, source, sha: createHash('sha1').update(source).digest('hex') };
  registry.push(script);
  return script;
}

/**
 * The command that line `line` (1-based, as Redis reports it) of the script with SHA1 `sha`
 * runs, lower-case: to name what an ACL refused inside a script when Redis 7.0 does not.
 */
export function commandAt(sha: string, line: number): string | undefined {
  const text = registry.find((script) => script.sha === sha)?.source.split('\n')[line - 1];
  return text === undefined ? undefined : /redis\.p?call\('(\w+)'/.exec(text)?.[1]?.toLowerCase();
}

/**
 * Sends SCRIPT LOAD for every script, pipelined, on a fresh connection. Without it the first
 * burst of EVALSHA after a (re)start meets NOSCRIPT and falls back to EVAL one call at a time
 * (2,000 leases renewed at once: 2,000 EVALs). Failures are harmless: EVAL still covers them.
 */
export async function preloadScripts(send: (args: string[]) => Promise<unknown>): Promise<void> {
  await Promise.all(registry.map((script) => send(['SCRIPT', 'LOAD', script.source]).catch(() => {})));
}

export const scripts = {
  acquire: loadScript('acquire'),
  acquireRecorded: loadScript('acquire-recorded'),
  forgetWaiter: loadScript('forget-waiter'),
  force: loadScript('force'),
  extend: loadScript('extend'),
  release: loadScript('release'),
  mutexWithdraw: loadScript('mutex-withdraw'),
  fenceRaise: loadScript('fence-raise'),
  canary: loadScript('canary'),
  quorumRestore: loadScript('quorum-restore'),
  noteGranted: loadScript('note-granted'),
  inspectGranted: loadScript('inspect-granted'),
};
