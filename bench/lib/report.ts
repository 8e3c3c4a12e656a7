import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Measurement } from './load.js';
import type { BenchSettings, ResultRow, SuiteResult } from './suite.js';

const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

function ms(value: number): string {
  if (!Number.isFinite(value)) return '-';
  // autocannon records latency in whole milliseconds.
  if (Number.isInteger(value)) return String(value);
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Server CPU per request (or message), with its share of one core in brackets (about 100% = saturated). */
function cpu(m: Measurement | null): string {
  if (!m || m.serverCpuUsPerRequest === null) return '-';
  const util = m.serverCpuUtilization === null ? '' : ` (${(m.serverCpuUtilization * 100).toFixed(0)}%)`;
  return `${m.serverCpuUsPerRequest.toFixed(0)} µs${util}`;
}

const ratioText = (ratio: number) => `${ratio.toFixed(3)} (${(ratio * 100).toFixed(1)}%)`;

/** The `vs <reference>` cell: the subject's ratio to it, `n/a` when it could not be measured, `-` where it does not apply. */
function versusCell(row: ResultRow, name: string): string {
  const versus = row.versus?.[name];
  if (versus === undefined) return '-';
  if (!('ratio' in versus)) return 'n/a';
  return row.role === 'reference' ? '1 (reference)' : ratioText(versus.ratio);
}

function cells(row: ResultRow, references: readonly string[]): string[] {
  return [
    row.suite,
    row.case,
    row.target,
    `${int.format(row.rate)} ${row.unit}`,
    row.latencyMs ? ms(row.latencyMs.p50) : '-',
    row.latencyMs ? ms(row.latencyMs.p99) : '-',
    cpu(row.measurement),
    row.ratio === null ? '-' : row.role === 'baseline' ? '1 (baseline)' : ratioText(row.ratio),
    ...references.map((name) => versusCell(row, name)),
  ];
}

/** `vs <reference>: n/a (why)` once per reason, with the cases it applies to. */
function unavailableLines(results: readonly SuiteResult[]): string[] {
  const byReason = new Map<string, string[]>();
  for (const r of results) {
    for (const row of r.rows) {
      for (const [name, versus] of Object.entries(row.versus ?? {})) {
        if ('ratio' in versus) continue;
        const key = `vs ${name}: n/a (${versus.unavailable})`;
        byReason.set(key, [...(byReason.get(key) ?? []), `${r.suite}/${row.case}`]);
      }
    }
  }
  return [...byReason].map(([line, cases]) => `${line} — ${cases.join(', ')}`);
}

/** A plain-text table of every row, followed by skipped and failed cases. */
export function formatTable(results: readonly SuiteResult[]): string {
  const references = [...new Set(results.flatMap((r) => r.rows.flatMap((row) => Object.keys(row.versus ?? {}))))];
  const header = ['suite', 'case', 'target', 'throughput', 'p50 ms', 'p99 ms', 'server CPU/op', 'vs baseline', ...references.map((name) => `vs ${name}`)];
  const rows = results.flatMap((r) => r.rows.map((row) => cells(row, references)));
  const numeric = new Set([3, 4, 5, 6]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => (numeric.has(i) ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
  const out = [line(header), widths.map((w) => '-'.repeat(w)).join('  ')];
  let previous = '';
  for (const [i, row] of rows.entries()) {
    const group = `${row[0]}/${row[1]}`;
    if (i > 0 && group !== previous) out.push('');
    previous = group;
    out.push(line(row));
  }
  if (rows.length === 0) out.push('(no measurements)');
  out.push(...unavailableLines(results));
  for (const r of results) {
    for (const s of r.skipped) out.push(`skipped ${r.suite}/${s.case}: ${s.reason}`);
    for (const f of r.failed) out.push(`FAILED  ${r.suite}/${f.case}: ${f.error.split('\n')[0] ?? ''}`);
  }
  const goals = results.flatMap((r) => (r.goals ?? []).map((g) => ({ suite: r.suite, ...g })));
  if (goals.length > 0) {
    out.push('', 'goals:');
    for (const g of goals) {
      const verdict = g.met === null ? 'not measured' : g.met ? 'met' : 'NOT MET';
      const measured = g.measured !== undefined ? ` — measured ${g.measured}` : g.ratio === null ? '' : ` — measured ${g.ratio.toFixed(3)}×`;
      out.push(`  ${verdict.padEnd(12)} ${g.suite}/${g.case}: ${g.goal} (${g.threshold ?? `≥ ${g.minRatio}× ${g.against ?? 'baseline'}`})${measured}`);
    }
  }
  return out.join('\n');
}

export interface Report {
  started_at: string;
  finished_at: string;
  suites_requested: string[];
  settings: BenchSettings;
  environment: Record<string, unknown>;
  results: SuiteResult[];
  /** Suites that threw (as opposed to cases recorded as failed inside a suite). */
  errors: Array<{ suite: string; error: string }>;
}

export function writeReport(path: string, report: Report): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
