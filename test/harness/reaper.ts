import type { ChildProcess } from 'node:child_process';

// Last line of defence: if a test process exits without running its `after` hooks (an uncaught
// error, process.exit), SIGKILL the children the harness spawned itself, by their own pids only.
// A child whose exit node has already seen is skipped: its pid may belong to someone else now.
const children = new Set<ChildProcess>();
let installed = false;

/** Kills `child` when this process exits, unless it has exited by then. */
export function reapOnExit(child: ChildProcess): void {
  if (!installed) {
    installed = true;
    process.once('exit', () => {
      for (const owned of children) {
        if (owned.exitCode === null && owned.signalCode === null) owned.kill('SIGKILL');
      }
    });
  }
  children.add(child);
  child.once('exit', () => children.delete(child));
}
