/**
 * Summarise V8 .cpuprofile files (as written by BENCH_CPU_PROFILE=1) as text: where the busy time of
 * the main thread went, by function (self time), by package or source area (self time) and by
 * function including callees (inclusive time).
 *
 *   node --import tsx bench/tools/profile-summary.ts [--top N] [--match TEXT] [--callers TEXT] [--depth N]
 *     [--timeline] [--from S] [--to S] <file or directory>…
 *
 * Directories are searched for .cpuprofile files. --match keeps only files whose path contains TEXT.
 * --callers adds, for the functions whose name or location contains TEXT, the call paths (up to
 * --depth frames, default 4) that time came through. --timeline prints the busy time of each second
 * of the profile; --from and --to (seconds since the profile began) then summarise only the measured
 * part of a run, without the process's start-up or a suite's set-up.
 * Times are sampled wall time of the main thread: time blocked in a synchronous native call (a
 * better-sqlite3 statement, an fsync) counts for the JS function that made it, while waiting on the
 * event loop counts as (idle) and is left out of the percentages.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function profileFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path)) out.push(...profileFiles([join(path, entry)]));
    } else if (path.endsWith('.cpuprofile')) {
      out.push(path);
    }
  }
  return out.sort();
}

/** A short, stable location: the part after node_modules/ or after the repository root. */
function where(url: string): string {
  if (!url) return '';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) return path.slice(nm + '/node_modules/'.length);
  const cwd = process.cwd();
  return path.startsWith(cwd) ? relative(cwd, path) : path;
}

/** The package or area a frame belongs to: a node_modules package, a source directory, Node itself, or V8. */
function area(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native V8/C++)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const local = where(url).split('/');
  return local.length > 2 ? `${local[0]}/${local[1]}/${local[2]}` : local.join('/');
}

function key(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  return frame.url ? `${name}  ${where(frame.url)}:${frame.lineNumber + 1}` : name;
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Each second of the profile with the time its main thread was busy, for choosing --from and --to. */
function timeline(file: string): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const busy = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    const second = Math.floor(at / 1e6);
    if (!idle.has(id)) busy.set(second, (busy.get(second) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000);
  });
  const lines = [...busy.entries()].filter(([, ms]) => ms >= 20).map(([s, ms]) => `  ${String(s).padStart(5)} s  busy ${ms.toFixed(0).padStart(5)} ms`);
  return [`== ${where(file)}`, 'seconds since the profile began with ≥ 20 ms busy:', ...lines, ''].join('\n');
}

/** Seconds since the profile began, [from, to): the samples summarised. */
type Window = { from: number; to: number };

function summarise(file: string, top: number, callersOf: string | null, depth: number, window: Window): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const paths = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let gc = 0;
  let program = 0;
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += (profile.timeDeltas[i] ?? 0) / 1e6;
    if (at < window.from || at >= window.to) continue;
    // A sample's weight is the time until the next one (the last sample gets nothing).
    const weight = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    total += weight;
    const name = node.callFrame.functionName;
    if (name === '(idle)') {
      idle += weight;
      continue;
    }
    if (name === '(garbage collector)') gc += weight;
    if (name === '(program)') program += weight;
    self.set(key(node.callFrame), (self.get(key(node.callFrame)) ?? 0) + weight);
    areas.set(area(node.callFrame), (areas.get(area(node.callFrame)) ?? 0) + weight);
    if (callersOf !== null) {
      // The deepest frame that matches, and the frames above it.
      const stack: string[] = [];
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) stack.push(key(byId.get(id)!.callFrame));
      const at = stack.findIndex((k) => k.includes(callersOf));
      if (at !== -1) {
        const path = stack.slice(at, at + depth + 1).join('\n      ← ');
        paths.set(path, (paths.get(path) ?? 0) + weight);
      }
    }
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (SPECIAL.has(frame.functionName)) continue;
      const k = key(frame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + weight);
    }
  }
  const busy = total - idle;
  const pct = (ms: number) => `${((ms / busy) * 100).toFixed(1).padStart(5)}%`;
  const ms = (value: number) => `${value.toFixed(0).padStart(7)} ms`;
  const table = (title: string, entries: Map<string, number>, filter: (k: string) => boolean = () => true) => [
    title,
    ...[...entries.entries()]
      .filter(([k]) => filter(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `  ${ms(v)} ${pct(v)}  ${k}`),
  ];
  // This checkout's dist/ or src/, or another build's (MAILROOM_BENCH_BIN: an absolute path outside the cwd).
  const own = (k: string) => / (dist|src)\//.test(k) || / \/\S*\/(dist|src)\//.test(k);
  return [
    `== ${where(file)}`,
    `sampled ${(total / 1000).toFixed(1)} s: busy ${(busy / 1000).toFixed(1)} s (garbage collector ${(gc / 1000).toFixed(1)} s, program ${(program / 1000).toFixed(1)} s), idle ${(idle / 1000).toFixed(1)} s; % of busy time`,
    ...table('self time by package / area:', areas),
    ...table(`self time, top ${top} functions:`, self),
    ...table(`inclusive time (with callees), top ${top} functions of the service (dist/ or src/):`, inclusive, own),
    ...table(`inclusive time (with callees), top ${top} functions anywhere:`, inclusive),
    ...(callersOf === null ? [] : table(`call paths into functions matching '${callersOf}' (inclusive):`, paths)),
    '',
  ].join('\n');
}

const args = process.argv.slice(2);
let top = 25;
let match: string | null = null;
let callers: string | null = null;
let depth = 4;
let showTimeline = false;
const window: Window = { from: 0, to: Infinity };
const paths: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number(args[++i]);
  else if (args[i] === '--match') match = args[++i] ?? null;
  else if (args[i] === '--callers') callers = args[++i] ?? null;
  else if (args[i] === '--depth') depth = Number(args[++i]);
  else if (args[i] === '--timeline') showTimeline = true;
  else if (args[i] === '--from') window.from = Number(args[++i]);
  else if (args[i] === '--to') window.to = Number(args[++i]);
  else paths.push(args[i]!);
}
if (paths.length === 0 || !Number.isInteger(top) || top < 1 || Number.isNaN(window.from) || Number.isNaN(window.to)) {
  console.error('usage: node --import tsx bench/tools/profile-summary.ts [--top N] [--match TEXT] [--callers TEXT] [--depth N] [--timeline] [--from S] [--to S] <file.cpuprofile | directory>…');
  process.exit(2);
}
const files = profileFiles(paths).filter((f) => match === null || f.includes(match));
if (files.length === 0) {
  console.error('no .cpuprofile files found');
  process.exit(1);
}
for (const file of files) console.log(showTimeline ? timeline(file) : summarise(file, top, callers, depth, window));
