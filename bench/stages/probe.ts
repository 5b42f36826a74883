// Timestamps for the stages of a handoff inside one bench process, without touching src/: every
// client socket this process opens (node:net's `net.client.socket` diagnostics channel) gets its
// `emit('data')` and `write` wrapped, and while a chunk carrying an invalidation push is being
// handled, the first setImmediate scheduled is wrapped too: in leasehold that is the dispatcher's
// deferred delivery (src/notify/dispatcher.ts). Installed only in bench/stages/worker.ts.
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { now } from '../lib/stats.ts';

/** One chunk that carried an invalidation push. */
export interface PushRecord {
  /** The chunk's 'data' event fired (bytes read into JS). */
  read: number;
  /** A setImmediate was scheduled while handling it (leasehold: the dispatcher heard the push). */
  scheduled?: number;
  /** That setImmediate's callback started (leasehold: the waiter hears of it). */
  delivered?: number;
}

/** The latest acquire attempt this process wrote. */
export interface Attempt {
  /** The acquire script's EVALSHA handed to socket.write. */
  written: number;
  /** The latest push read before it, and when that push was delivered. */
  push: PushRecord | undefined;
  /** First chunk read on the same socket after the write (the reply, or the chunk carrying it). */
  reply?: number;
  /** leasehold published `leasehold:acquired` (diagnostics_channel) after it. */
  acquiredEvent?: number;
}

/** A direct grant's message (docs/direct-grants.md) read in this process. */
export interface GrantRecord {
  /** The chunk carrying the message on the grant subscription's socket was read. */
  read: number;
  /** leasehold published `leasehold:acquired` after it. */
  acquiredEvent?: number;
}

export class Probe {
  #acquire = '';
  #release = '';
  #lastPush: PushRecord | undefined;
  #capturing: PushRecord | undefined;
  /** Times every acquire attempt was written (the herd's attempts, counted by the parent). */
  readonly attemptTimes: number[] = [];
  attempt: Attempt | undefined;
  /** The first grant message read since the worker cleared it (before each acquire). */
  grant: GrantRecord | undefined;
  /** When the release script was handed to socket.write since the last `expectRelease()`. */
  releaseWritten: number | undefined;

  /** Which EVALSHA is an acquire attempt and which a release, by the scripts' SHA1s. */
  configure(acquireSha: string, releaseSha: string): void {
    this.#acquire = acquireSha;
    this.#release = releaseSha;
  }

  expectRelease(): void {
    this.releaseWritten = undefined;
  }

  install(): void {
    diagnosticsChannel.subscribe('net.client.socket', (message) => {
      this.#instrument((message as { socket: Socket }).socket);
    });
    diagnosticsChannel.subscribe('leasehold:acquired', () => {
      const t = now();
      if (this.attempt !== undefined) this.attempt.acquiredEvent ??= t;
      if (this.grant !== undefined) this.grant.acquiredEvent ??= t;
    });
    const original = globalThis.setImmediate;
    const wrapped = (callback: (...args: unknown[]) => void, ...args: unknown[]) => {
      const push = this.#capturing;
      if (push === undefined || push.scheduled !== undefined) return original(callback, ...args);
      push.scheduled = now();
      return original(
        (...a: unknown[]) => {
          push.delivered = now();
          callback(...a);
        },
        ...args,
      );
    };
    globalThis.setImmediate = Object.assign(wrapped, original) as typeof setImmediate;
  }

  #instrument(socket: Socket): void {
    const probe = this;
    let awaitingReply: Attempt | undefined;
    const emit = socket.emit as (this: Socket, event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
      if (event !== 'data') return emit.call(this, event, ...args);
      const t = now();
      if (awaitingReply !== undefined) {
        awaitingReply.reply = t;
        awaitingReply = undefined;
      }
      const chunk = args[0];
      // A grant: a pub/sub message on a leasehold grant channel (`<prefix>:grants:<token>`).
      if (Buffer.isBuffer(chunk) && chunk.includes(':grants:') && chunk.includes('message'))
        probe.grant ??= { read: t };
      if (!Buffer.isBuffer(chunk) || !chunk.includes('invalidate')) return emit.call(this, event, ...args);
      const push: PushRecord = { read: t };
      probe.#lastPush = push;
      probe.#capturing = push;
      try {
        return emit.call(this, event, ...args);
      } finally {
        probe.#capturing = undefined;
      }
    } as Socket['emit'];
    // Socket#connect() puts the prototype's write back (net.js), after this channel fired.
    socket.prependOnceListener('connect', () =>
      probe.#wrapWrite(socket, (attempt) => {
        awaitingReply = attempt;
      }),
    );
  }

  #wrapWrite(socket: Socket, awaitReply: (attempt: Attempt) => void): void {
    const probe = this;
    const write = socket.write;
    socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
      if (probe.#acquire !== '' && (typeof chunk === 'string' || Buffer.isBuffer(chunk))) {
        if (chunk.includes(probe.#acquire)) {
          const t = now();
          probe.attemptTimes.push(t);
          probe.attempt = { written: t, push: probe.#lastPush };
          awaitReply(probe.attempt);
        } else if (probe.releaseWritten === undefined && chunk.includes(probe.#release)) {
          probe.releaseWritten = now();
        }
      }
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as Socket['write'];
  }
}
