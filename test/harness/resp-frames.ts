/**
 * Splits a byte stream of RESP2/RESP3 replies into whole frames, without decoding them: the
 * fault proxy uses it to drop invalidation pushes while passing every other reply through.
 */
export class FrameSplitter {
  #pending: Buffer = Buffer.alloc(0);

  /** Appends `chunk` and returns the frames it completed (a partial frame waits for more). */
  push(chunk: Buffer): Buffer[] {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const frames: Buffer[] = [];
    let start = 0;
    for (;;) {
      const end = frameEnd(this.#pending, start);
      if (end === undefined) break;
      frames.push(this.#pending.subarray(start, end));
      start = end;
    }
    this.#pending = this.#pending.subarray(start);
    return frames;
  }
}

/** The end offset of the frame starting at `start`, or undefined when it is not complete yet. */
export function frameEnd(buffer: Buffer, start: number): number | undefined {
  if (start >= buffer.length) return undefined;
  const lineEnd = buffer.indexOf('\r\n', start);
  if (lineEnd === -1) return undefined;
  const type = String.fromCharCode(buffer[start] ?? 0);
  const header = buffer.toString('latin1', start + 1, lineEnd);
  const after = lineEnd + 2;
  switch (type) {
    case '+':
    case '-':
    case ':':
    case ',':
    case '#':
    case '_':
    case '(':
      return after;
    case '$':
    case '!':
    case '=': {
      const length = Number(header);
      if (length < 0) return after;
      return buffer.length >= after + length + 2 ? after + length + 2 : undefined;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = Number(header);
      if (count < 0) return after;
      let offset = after;
      const elements = type === '%' || type === '|' ? count * 2 : count;
      for (let i = 0; i < elements; i++) {
        const end = frameEnd(buffer, offset);
        if (end === undefined) return undefined;
        offset = end;
      }
      // An attribute map is followed by the reply it annotates: one frame with it.
      return type === '|' ? frameEnd(buffer, offset) : offset;
    }
    default:
      throw new Error(`not a RESP frame: type byte ${JSON.stringify(type)}`);
  }
}

const RESP3_INVALIDATE = Buffer.from('>2\r\n$10\r\ninvalidate\r\n');
const RESP2_INVALIDATE = Buffer.from('*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n');

/** An invalidation push: RESP3 `>invalidate`, or the RESP2 message of a REDIRECT subscriber. */
export function isInvalidation(frame: Buffer): boolean {
  return (
    frame.subarray(0, RESP3_INVALIDATE.length).equals(RESP3_INVALIDATE) ||
    frame.subarray(0, RESP2_INVALIDATE.length).equals(RESP2_INVALIDATE)
  );
}
