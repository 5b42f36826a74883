/** Redis Cluster has this many hash slots; a key's slot picks the master that serves it. */
export const SLOTS = 16_384;

/** CRC16/XMODEM by byte: every key of every acquisition is hashed (routing, fence marks). */
const TABLE = Uint16Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = (crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1) & 0xffff;
  return crc;
});

/** CRC16/XMODEM of `text`'s UTF-8 bytes from `from` to `to` (UTF-16 indexes), mod SLOTS. */
function slotOf(text: string, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    // Past ASCII, the UTF-8 bytes differ from the UTF-16 code units: hash the bytes.
    if (code >= 0x80) return slotOfBytes(Buffer.from(text.slice(from, to)));
    crc = ((crc << 8) & 0xffff) ^ TABLE[(crc >> 8) ^ code]!;
  }
  return crc % SLOTS;
}

function slotOfBytes(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[(crc >> 8) ^ byte]!;
  return crc % SLOTS;
}

/** The hash slot of a key: CRC16/XMODEM of its `{hash tag}` if it has one, mod 16384. */
export function keySlot(key: string): number {
  // Redis's rule on bytes; '{' and '}' are single bytes in UTF-8 and single code units in UTF-16.
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return slotOf(key, open + 1, close);
  }
  return slotOf(key, 0, key.length);
}

/** The slot of a hash tag's text (what `{text}` in a key hashes to). */
export const tagSlot = (text: string): number => slotOf(text, 0, text.length);
