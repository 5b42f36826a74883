import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Moves a redis-server's clocks without touching the host's: an LD_PRELOAD shim, compiled with gcc
 * into a temp dir, that wraps clock_gettime (CLOCK_REALTIME* and CLOCK_MONOTONIC*), gettimeofday and
 * time, adding offsets it reads from a file the test writes. libfaketime (Debian's `faketime`) hangs
 * the jemalloc redis-server builds; this shim calls the kernel through syscall(2), never dlsym or
 * malloc, so it cannot recurse into the allocator.
 *
 * The file `<dir>/<pid>` (else `<dir>/all`) holds two integers, milliseconds: the wall-clock offset
 * and the monotonic offset. The shim re-reads it at most once per millisecond of real time, so a
 * jump takes effect on the server's next clock read.
 *
 * @example
 * const clock = FakeClock.create(); // undefined without gcc
 * const server = await RedisServer.start({ env: clock.env });
 * clock.set({ wall: 60_000 }, server.pid); // TIME now reads a minute ahead
 */
export class FakeClock {
  readonly dir: string;
  readonly #library: string;

  private constructor(dir: string, library: string) {
    this.dir = dir;
    this.#library = library;
  }

  /** Compiles the shim; undefined (with `FakeClock.unavailable` set) when gcc is missing or fails. */
  static create(): FakeClock | undefined {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-fake-clock-'));
    const source = join(dir, 'fake-clock.c');
    const library = join(dir, 'fake-clock.so');
    writeFileSync(source, SHIM);
    try {
      execFileSync('gcc', ['-O2', '-shared', '-fPIC', '-o', library, source], { stdio: 'pipe' });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      FakeClock.unavailable = `gcc could not build the clock shim: ${String((error as Error).message).split('\n')[0]}`;
      return undefined;
    }
    const clock = new FakeClock(dir, library);
    clock.set({});
    return clock;
  }

  /** Why `create()` returned undefined. */
  static unavailable = '';

  /** Why the shim cannot be built here (no gcc), or undefined when it can. */
  static missing(): string | undefined {
    try {
      execFileSync('gcc', ['--version'], { stdio: 'ignore' });
      return undefined;
    } catch {
      return 'gcc is missing: it builds the clock shim (test/harness/fake-clock.ts)';
    }
  }

  /** Environment for a redis-server that should run on this clock. */
  get env(): NodeJS.ProcessEnv {
    return { LD_PRELOAD: this.#library, LEASEHOLD_FAKE_CLOCK_DIR: this.dir };
  }

  /**
   * Sets the offsets (ms; both default to 0) for one server process, by pid, or for every process
   * without a file of its own. Written to a temp file and renamed, so the shim never reads half.
   */
  set(offsets: { wall?: number; monotonic?: number }, pid?: number): void {
    const file = join(this.dir, pid === undefined ? 'all' : String(pid));
    const text = `${Math.round(offsets.wall ?? 0)} ${Math.round(offsets.monotonic ?? 0)}\n`;
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const SHIM = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t wall_ns, mono_ns, checked_ns = -1;

static long raw(clockid_t id, struct timespec *ts) { return syscall(SYS_clock_gettime, id, ts); }

static int64_t parse(const char *p, const char **end) {
  int64_t v = 0, sign = 1;
  while (*p == ' ') p++;
  if (*p == '-') { sign = -1; p++; }
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  *end = p;
  return sign * v;
}

static int read_file(const char *dir, const char *name) {
  char path[4096];
  size_t n = 0;
  for (const char *s = dir; *s && n < sizeof path - 32; s++) path[n++] = *s;
  path[n++] = '/';
  for (const char *s = name; *s; s++) path[n++] = *s;
  path[n] = 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) return 0;
  char buf[64];
  long got = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (got <= 0) return 0;
  buf[got] = 0;
  const char *p = buf;
  int64_t w = parse(p, &p);
  int64_t m = parse(p, &p);
  wall_ns = w * 1000000;
  mono_ns = m * 1000000;
  return 1;
}

static void refresh(void) {
  struct timespec now;
  raw(CLOCK_MONOTONIC, &now);
  int64_t t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  if (checked_ns >= 0 && t - checked_ns < 1000000) return;
  checked_ns = t;
  extern char **environ;
  const char *dir = 0;
  for (char **e = environ; e && *e; e++) {
    const char *k = "LEASEHOLD_FAKE_CLOCK_DIR=", *s = *e;
    while (*k && *k == *s) { k++; s++; }
    if (!*k) { dir = s; break; }
  }
  if (!dir) return;
  char pid[24];
  int n = 0;
  long v = syscall(SYS_getpid);
  char tmp[24];
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  for (int i = 0; i < n; i++) pid[i] = tmp[n - 1 - i];
  pid[n] = 0;
  if (!read_file(dir, pid)) read_file(dir, "all");
}

static void shift(struct timespec *ts, int64_t by) {
  int64_t t = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + by;
  ts->tv_sec = t / 1000000000;
  ts->tv_nsec = t % 1000000000;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long r = raw(id, ts);
  if (r != 0) return (int)r;
  refresh();
  if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) shift(ts, wall_ns);
  else if (id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_MONOTONIC_RAW ||
           id == CLOCK_BOOTTIME) shift(ts, mono_ns);
  return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
`;
