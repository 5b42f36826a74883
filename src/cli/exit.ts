/**
 * Exit codes of the `leasehold` command (docs/cli.md lists them, online at DOCS). Codes from sysexits.h where one
 * fits; `run` otherwise exits with its command's own code, or 128 + N when a signal N ended it.
 */
export const EXIT = {
  ok: 0,
  /** Bad arguments or options. */
  usage: 64,
  /** Could not connect to Redis, or Redis stopped answering. */
  unavailable: 69,
  /** A bug or an unexpected failure inside leasehold. */
  software: 70,
  /** `run`: the lock was not acquired (busy with --no-wait, or --timeout ran out). */
  notAcquired: 75,
  /** `run`: the lock was lost while the command ran; the command was terminated. */
  lost: 76,
  /**
   * Redis refused the credentials (WRONGPASS, NOAUTH) or a command or key (NOPERM: the ACL
   * user lacks a permission leasehold needs, docs/security.md). sysexits EX_NOPERM.
   */
  noPermission: 77,
  /** `dashboard`: cannot listen on --host / --port (in use, not an address here, not allowed). EX_CANTCREAT. */
  cannotListen: 73,
  /** `run`: the command exists but could not be executed. */
  cannotExecute: 126,
  /** `run`: the command was not found. */
  notFound: 127,
} as const;

/** Where the documentation lives online (the package ships only README.md). */
export const DOCS = 'https://github.com/leasehold-js/leasehold/blob/main/docs';

/** A failure with the exit code it maps to; main() prints the message and exits with the code. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.usage) {
    super(message);
    this.exitCode = exitCode;
  }
}
