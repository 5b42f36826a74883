/** Milliseconds for tables: 3 significant digits, at least µs resolution. */
export function fmtMs(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** Rates and counts: grouped thousands, decimals only when small. */
export function fmtNum(value: number | undefined, decimals?: number): string {
  if (value === undefined || !Number.isFinite(value)) return '–';
  const d = decimals ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2);
  return value.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

export function fmtBytes(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '–';
  return `${(value / 1024).toFixed(2)} KiB`;
}

/** A markdown table; cells are escaped for pipes. `head` may be one string, its cells split by ' | '. */
export function table(columns: string[] | string, rows: string[][], align?: ('l' | 'r')[]): string {
  const head = typeof columns === 'string' ? columns.split(' | ') : columns;
  const esc = (cell: string) => cell.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const sep = head.map((_, i) => ((align?.[i] ?? (i === 0 ? 'l' : 'r')) === 'r' ? '---:' : '---'));
  return [head, sep, ...rows].map((row) => `| ${row.map(esc).join(' | ')} |`).join('\n');
}

/** `a / b` as "N×", or "–". */
export function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  const r = a / b;
  return r >= 10 ? `${r.toFixed(0)}×` : `${r.toFixed(2)}×`;
}
