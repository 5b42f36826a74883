/**
 * The little RESP2 a subscriber connection needs (src/driver/glide-watch.ts): commands written as
 * arrays of bulk strings, replies read incrementally (the test harness's raw commands use it too).
 */
/** A decoded RESP2 reply: bulk and simple strings as text, errors as `Error` values. */
export type Reply = string | number | null | Error | Reply[];

export function encode(args: readonly string[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return out;
}

/** Reads the replies complete in `buffer`; returns them and the bytes left over. */
export function readReplies(buffer: Buffer): { replies: Reply[]; rest: Buffer } {
  const replies: Reply[] = [];
  let at = 0;
  for (;;) {
    const parsed = parse(buffer, at);
    if (parsed === undefined) break;
    replies.push(parsed.value);
    at = parsed.end;
  }
  return { replies, rest: buffer.subarray(at) };
}

/** One reply starting at `start`, or undefined when it has not fully arrived. */
export function parse(buffer: Buffer, start: number): { value: Reply; end: number } | undefined {
  const eol = buffer.indexOf('\r\n', start);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buffer[start] ?? 0);
  const line = buffer.toString('utf8', start + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}
