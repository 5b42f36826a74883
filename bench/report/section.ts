// What the scenario sections of docs/benchmarks.md (section-*.ts) share: a chart's link, a
// scenario's settings line, and contender ids shown by their labels.
import type { Results } from '../results.ts';
import { fmtNum } from './format.ts';

/** A chart drawn into docs/benchmarks/ (report/charts.ts). */
export interface Chart {
  file: string;
  title: string;
}

/** The chart's image line, or nothing when this run drew no such chart. */
export function chartLink(charts: Chart[], file: string): string {
  const chart = charts.find((c) => c.file === file);
  return chart === undefined ? '' : `\n![${chart.title}](benchmarks/${chart.file})\n`;
}

/** A scenario's settings as one line: numbers, lists of numbers (a / b / c), strings; nothing else. */
export function settingsLine(settings: object): string {
  const value = (v: unknown): string | undefined =>
    typeof v === 'number'
      ? fmtNum(v, Number.isInteger(v) ? 0 : 2)
      : Array.isArray(v) && v.every((x) => typeof x === 'number')
        ? v.map(value).join(' / ')
        : typeof v === 'string' || typeof v === 'boolean'
          ? String(v)
          : undefined;
  return Object.entries(settings)
    .filter(([, v]) => value(v) !== undefined)
    .map(([k, v]) => `\`${k}\` ${value(v)}`)
    .join(', ');
}

/** A scenario section's heading and settings line; `more` follows the settings in their paragraph. */
export function heading(title: string, settings: object, more = ''): string[] {
  return [title, '', `Settings: ${settingsLine(settings)}.${more}`, ''];
}

/** A contender id as the report shows it: its label, or the id when the run lists no such contender. */
export function contenderName(results: Results): (id: string) => string {
  const label = new Map(results.contenders.map((c) => [c.id, c.label]));
  return (id) => label.get(id) ?? id;
}
