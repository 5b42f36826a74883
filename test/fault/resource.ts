import { createClient } from 'redis';
import { hostNow } from '../harness/host-clock.ts';
import { startServer } from '../harness/masters.ts';
import type { RedisServer } from '../harness/redis-server.ts';

/**
 * The protected resource of the safety checker: a key on a redis-server of its own (never the
 * one the locks live on, so lock faults do not touch it) that accepts a write only when the
 * writer's fencing token is >= the highest token it has accepted. The same token may write
 * again (one holder, several writes); a new holder needs a strictly greater one. Every attempt,
 * accepted or not, is appended to a log with the server's TIME (epoch microseconds).
 */
export const FENCED_WRITE = `
local t = redis.call('TIME')
local now = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local high = redis.call('GET', KEYS[1])
local ok = 0
if high == false or tonumber(ARGV[1]) >= tonumber(high) then
  ok = 1
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('RPUSH', KEYS[2], table.concat({ok, ARGV[1], high or '-', ARGV[2], ARGV[3], now}, ' '))
return {ok, high or '-'}
`;

/** One attempt to write, as the resource logged it. */
export interface ResourceEntry {
  accepted: boolean;
  token: bigint;
  /** Highest accepted token before this attempt (undefined for the first write). */
  highest: bigint | undefined;
  writer: string;
  seq: number;
  /** Server time of the attempt, epoch ms (microsecond precision). */
  at: number;
}

/** The one command a worker needs from its own client to the resource. */
export interface ResourceClient {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** Keys of one scenario run's resource. */
export const resourceKeys = (namespace: string): [string, string] => [
  `${namespace}:highest`,
  `${namespace}:log`,
];

/** A fenced write from a worker: resolves whether the resource accepted it. */
export async function fencedWrite(
  client: ResourceClient,
  namespace: string,
  token: bigint,
  writer: string,
  seq: number,
): Promise<boolean> {
  const reply = (await client.eval(FENCED_WRITE, {
    keys: resourceKeys(namespace),
    arguments: [String(token), writer, String(seq)],
  })) as [number, string];
  return reply[0] === 1;
}

export function parseEntry(line: string): ResourceEntry {
  const [ok, token, highest, writer, seq, micros] = line.split(' ') as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    accepted: ok === '1',
    token: BigInt(token),
    highest: highest === '-' ? undefined : BigInt(highest),
    writer,
    seq: Number(seq),
    at: Number(micros) / 1_000,
  };
}

interface LogClient {
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  sendCommand(args: string[]): Promise<unknown>;
  close(): Promise<unknown>;
}

/** The resource server, started once per run and shared by its scenarios (one namespace each). */
export class FencedResource {
  readonly server: RedisServer;
  readonly #client: LogClient;

  private constructor(server: RedisServer, client: LogClient) {
    this.server = server;
    this.#client = client;
  }

  static async start(): Promise<FencedResource> {
    const server = await startServer();
    const client = createClient({ url: server.url });
    client.on('error', () => {});
    await client.connect();
    return new FencedResource(server, client);
  }

  get url(): string {
    return this.server.url;
  }

  /**
   * The log of one run, its times moved from the server's wall clock (TIME) onto the host's
   * monotonic clock (hostNow()), which is what the workers report in.
   */
  async log(namespace: string): Promise<ResourceEntry[]> {
    const lines = await this.#client.lRange(resourceKeys(namespace)[1], 0, -1);
    const offset = await this.hostOffset();
    return lines.map(parseEntry).map((entry) => ({ ...entry, at: entry.at - offset }));
  }

  /**
   * Server TIME minus hostNow(), in ms: TIME bracketed by two host readings, the tightest of a
   * few tries (the error is at most half that round trip, tens of microseconds here).
   */
  async hostOffset(tries = 5): Promise<number> {
    let best = { rtt: Infinity, offset: 0 };
    for (let i = 0; i < tries; i++) {
      const before = hostNow();
      const [seconds, micros] = (await this.#client.sendCommand(['TIME'])) as [string, string];
      const after = hostNow();
      const server = Number(seconds) * 1_000 + Number(micros) / 1_000;
      if (after - before < best.rtt) best = { rtt: after - before, offset: server - (before + after) / 2 };
    }
    return best.offset;
  }

  async stop(): Promise<void> {
    await this.#client.close().catch(() => {});
    await this.server.stop();
  }
}
