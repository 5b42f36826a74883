import { createConnection } from 'node:net';
// The library's own RESP2 reader (src/driver/resp.ts, for its GLIDE Watch): one parser for both.
import { encode as encodeCommand, parse, type Reply } from '../../src/driver/resp.ts';

export type { Reply };

/**
 * Sends commands to one port over one fresh connection (pipelined, so `WAIT` sees the `SET` before
 * it) and returns every reply; error replies come back as `Error` values, not rejections. The
 * harness uses this instead of a client library so that topology checks never reconnect, retry or
 * follow redirects behind its back.
 */
export function pipeline(port: number, commands: (string | number)[][], timeout = 2_000): Promise<Reply[]> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const replies: Reply[] = [];
    let buffer = Buffer.alloc(0);
    socket.setTimeout(timeout);
    socket.on('connect', () => socket.write(commands.map(encode).join('')));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      try {
        for (;;) {
          const parsed = parse(buffer, 0);
          if (parsed === undefined) break;
          replies.push(parsed.value);
          buffer = buffer.subarray(parsed.end);
        }
      } catch (error) {
        socket.destroy();
        reject(error);
        return;
      }
      if (replies.length >= commands.length) {
        socket.destroy();
        resolve(replies);
      }
    });
    socket.on('timeout', () => {
      socket.destroy();
      reject(new Error(`no reply from port ${port} within ${timeout} ms to ${describe(commands)}`));
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`port ${port} closed the connection: ${describe(commands)}`)));
  });
}

/** Sends one command; rejects on an error reply. */
export async function command(port: number, args: (string | number)[], timeout?: number): Promise<Reply> {
  const [reply] = await pipeline(port, [args], timeout);
  if (reply instanceof Error) throw reply;
  return reply ?? null;
}

/** `INFO section` parsed into fields. */
export async function info(port: number, section: string): Promise<Record<string, string>> {
  return parseFields(String(await command(port, ['INFO', section])));
}

/** Parses `name:value` lines, as in INFO and CLUSTER INFO. */
export function parseFields(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** Turns a flat `[name, value, name, value]` reply (SENTINEL MASTER and friends) into a record. */
export function pairs(reply: Reply): Record<string, string> {
  const record: Record<string, string> = {};
  if (!Array.isArray(reply)) return record;
  for (let i = 0; i + 1 < reply.length; i += 2) record[String(reply[i])] = String(reply[i + 1]);
  return record;
}

function encode(args: (string | number)[]): string {
  return encodeCommand(args.map(String));
}

function describe(commands: (string | number)[][]): string {
  return commands.map((args) => args.join(' ')).join('; ');
}
