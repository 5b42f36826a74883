// The cross-process handoff floor's client: leasehold's own acquire.lua and release.lua over bare
// RESP sockets, no client library and no lock library. A waiter arms tracking with its failed
// attempt (the script's trailing PTTL) and retries inside the very callback that read the push.
// Two ways to hear the push, as leasehold's two drivers do: `push` (RESP3, CLIENT TRACKING ON on
// the command connection, like node-redis) and `redirect` (RESP2, tracking redirected to a second
// connection subscribed to __redis__:invalidate, like ioredis).
import { createHash } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import { scriptSource } from '../../src/scripts/index.ts';

export type Value = string | number | null | Error | Value[];

class Incomplete extends Error {}

/** Parses one RESP2/RESP3 value at `at`; throws Incomplete when the buffer ends first. */
function parse(buf: Buffer, at: number): { value: Value; next: number; push: boolean } {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) throw new Incomplete();
  const type = String.fromCharCode(buf[at]!);
  const line = buf.toString('latin1', at + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, next, push: false };
    case '-':
      return { value: new Error(line), next, push: false };
    case ':':
      return { value: Number(line), next, push: false };
    case '_':
      return { value: null, next, push: false };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, next, push: false };
      if (buf.length < next + length + 2) throw new Incomplete();
      return { value: buf.toString('latin1', next, next + length), next: next + length + 2, push: false };
    }
    case '*':
    case '~':
    case '%':
    case '>': {
      const count = Number(line) * (type === '%' ? 2 : 1);
      if (count < 0) return { value: null, next, push: false };
      const items: Value[] = [];
      let pos = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buf, pos);
        items.push(item.value);
        pos = item.next;
      }
      return { value: items, next: pos, push: type === '>' };
    }
    default:
      throw new Error(`unexpected RESP type ${type}`);
  }
}

/** One bare connection: commands answered in order, pushes (or pub/sub messages) to `onPush`. */
export class Connection {
  readonly socket: Socket;
  readonly #pending: ((value: Value) => void)[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  onPush: (value: Value[]) => void = () => {};

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      let pos = 0;
      for (;;) {
        let item: ReturnType<typeof parse>;
        try {
          item = parse(this.#buffer, pos);
        } catch (error) {
          if (error instanceof Incomplete) break;
          throw error;
        }
        pos = item.next;
        const v = item.value;
        if (item.push || (Array.isArray(v) && v[0] === 'message')) this.onPush(v as Value[]);
        else this.#pending.shift()?.(v);
        if (pos >= this.#buffer.length) break;
      }
      this.#buffer = pos >= this.#buffer.length ? Buffer.alloc(0) : this.#buffer.subarray(pos);
    });
  }

  static async open(port: number): Promise<Connection> {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new Connection(socket);
  }

  call(args: readonly string[]): Promise<Value> {
    return new Promise((resolve, reject) => {
      this.#pending.push((value) => (value instanceof Error ? reject(value) : resolve(value)));
      this.write(args);
    });
  }

  /** Sends a command whose answer comes as a push (RESP3 SUBSCRIBE), not as a reply. */
  write(args: readonly string[]): void {
    let text = `*${args.length}\r\n`;
    for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    this.socket.write(text);
  }
}

const sha = (source: string) => createHash('sha1').update(source).digest('hex');
export const ACQUIRE = scriptSource('acquire');
export const RELEASE = scriptSource('release');
export const ACQUIRE_SHA = sha(ACQUIRE);
export const RELEASE_SHA = sha(RELEASE);

export type BareMode = 'push' | 'redirect';

/** A lock over bare sockets, with leasehold's key layout and scripts. */
export class BareLock {
  readonly #cmd: Connection;
  readonly #sub: Connection | undefined;
  #pushes = 0;
  /** The lock key being waited for. */
  #key = '';
  #wake: (() => void) | undefined;

  private constructor(cmd: Connection, sub: Connection | undefined) {
    this.#cmd = cmd;
    this.#sub = sub;
    // Like leasehold's dispatcher, only a push for the lock key (or a null one) wakes the waiter:
    // on Redis 7.0 a failed attempt also arms the fencing counter, whose INCR by the winner
    // pushes to every loser.
    const onPush = (value: Value[]) => {
      const keys = value[value.length - 1];
      if (Array.isArray(keys) && !keys.includes(this.#key)) return;
      this.#pushes++;
      const wake = this.#wake;
      this.#wake = undefined;
      wake?.();
    };
    cmd.onPush = onPush;
    if (sub !== undefined) sub.onPush = onPush;
  }

  static async connect(port: number, mode: BareMode): Promise<BareLock> {
    const cmd = await Connection.open(port);
    let sub: Connection | undefined;
    if (mode === 'push') {
      await cmd.call(['HELLO', '3']);
      await cmd.call(['CLIENT', 'TRACKING', 'ON']);
    } else {
      sub = await Connection.open(port);
      const id = String(await sub.call(['CLIENT', 'ID']));
      await sub.call(['SUBSCRIBE', '__redis__:invalidate']);
      await cmd.call(['CLIENT', 'TRACKING', 'ON', 'REDIRECT', id]);
    }
    await cmd.call(['SCRIPT', 'LOAD', ACQUIRE]);
    await cmd.call(['SCRIPT', 'LOAD', RELEASE]);
    return new BareLock(cmd, sub);
  }

  /**
   * Tries, and on a refusal waits for any push (or the holder's PTTL) and tries again. A push
   * that arrived while the attempt was in flight means "try again now".
   */
  async acquire(name: string, token: string, ttl: number): Promise<void> {
    const key = `leasehold:{${name}}`;
    this.#key = key;
    for (;;) {
      const seen = this.#pushes;
      const reply = (await this.#cmd.call([
        'EVALSHA',
        ACQUIRE_SHA,
        '2',
        key,
        `${key}:fence`,
        token,
        String(ttl),
      ])) as [number, number];
      if (reply[0] === 1) return;
      if (this.#pushes !== seen) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(
          () => {
            this.#wake = undefined;
            resolve();
          },
          Math.max(1, reply[1]),
        );
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async release(name: string, token: string): Promise<void> {
    await this.#cmd.call(['EVALSHA', RELEASE_SHA, '1', `leasehold:{${name}}`, token]);
  }

  close(): void {
    this.#cmd.socket.destroy();
    this.#sub?.socket.destroy();
  }
}
