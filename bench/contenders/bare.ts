// A bare RESP2/RESP3 connection, no client library: the direct-grant floor's socket
// (bench/contenders/floor.ts). The SHA1s of leasehold's acquire and release scripts tell the
// stages probe (bench/scenarios/stages.ts) which write is which.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
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
    await once(socket, 'connect');
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
export const ACQUIRE_SHA = sha(scriptSource('acquire'));
export const RELEASE_SHA = sha(scriptSource('release'));
