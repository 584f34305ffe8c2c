/**
 * Where a process's CPU went, from a V8 CPU profile (`bench:flows --profile DIR` writes one of the API+worker
 * process): the busy time by owner (paygate's areas, each package under node_modules, Node's internals, the garbage
 * collector), the functions with the most self time, and paygate's own functions by inclusive time. Idle time is
 * left out of every share.
 *
 *   npx tsx bench/profile-summary.ts /tmp/prof/CPU.*.cpuprofile [--top 25]
 *
 * Prints figures; the profile is the judge of what a flow's CPU is spent on.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: number[];
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const { values, positionals } = parseArgs({ options: { top: { type: 'string' } }, allowPositionals: true });
const TOP = Number(values.top ?? 25);
if (positionals.length === 0) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top N]');

/** Who owns a frame: a package, one of paygate's areas, Node's internals, or V8's own pseudo-frames. */
function ownerOf(url: string, functionName: string): string {
  if (url === '') return `(${functionName || 'native'})`.replace(/^\(\((.*)\)\)$/, '($1)');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const area = /\/(src|engine\/src|bench)\/([^/]+)/.exec(url);
  if (area) return `${area[1]}/${area[2]!.replace(/\.ts$/, '')}`;
  if (url.startsWith('node:')) return 'node:internal';
  return url;
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });

  const idle = [...selfUs].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((s, [, us]) => s + us, 0);
  const total = [...selfUs.values()].reduce((s, us) => s + us, 0);
  const busy = total - idle;
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1)} %`;

  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    const owner = ownerOf(url, functionName);
    owners.set(owner, (owners.get(owner) ?? 0) + us);
    const name = `${functionName || '(anonymous)'} ${owner}${url ? `:${lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    // paygate's own functions on the stack of this sample, each counted once
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (!/\/(src|engine\/src)\//.test(frame.url) || frame.url.includes('node_modules')) continue;
      const own = `${frame.functionName || '(anonymous)'} ${ownerOf(frame.url, frame.functionName)}:${frame.lineNumber + 1}`;
      if (seen.has(own)) continue;
      seen.add(own);
      inclusive.set(own, (inclusive.get(own) ?? 0) + us);
    }
  }
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP);

  console.log(`${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy`);
  console.log('\n| owner | share of busy time |\n|---|---|');
  for (const [owner, us] of top(owners)) console.log(`| ${owner} | ${pct(us)} |`);
  console.log('\n| function (self time) | share |\n|---|---|');
  for (const [name, us] of top(functions)) console.log(`| ${name} | ${pct(us)} |`);
  console.log("\n| paygate's function (inclusive) | share |\n|---|---|");
  for (const [name, us] of top(inclusive)) console.log(`| ${name} | ${pct(us)} |`);
  console.log('');
}
