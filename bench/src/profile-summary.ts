/**
 * `node bench/dist/profile-summary.js FILE.cpuprofile [N]`: the N functions with the most self time
 * and the most total (self + callees) time in a V8 CPU profile, to see what bounds a scenario.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function label(n: ProfileNode): string {
  const file = n.callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|packages)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${file}:${n.callFrame.lineNumber + 1}`;
}

function summarize(profile: Profile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const selfByLabel = new Map<string, number>();
  const totalByLabel = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    selfByLabel.set(label(node), (selfByLabel.get(label(node)) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (seen.has(l)) continue; // recursion: count once per sample
      seen.add(l);
      totalByLabel.set(l, (totalByLabel.get(l) ?? 0) + us);
    }
  }
  const all = [...self.values()].reduce((a, b) => a + b, 0);
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([l, us]) => `${((us / all) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${l}`)
      .join('\n');
  return `total ${(all / 1000).toFixed(0)} ms\n\nself:\n${list(selfByLabel)}\n\ntotal:\n${list(totalByLabel)}\n`;
}

const [file, n] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/dist/profile-summary.js FILE.cpuprofile [TOP]\n');
  process.exit(2);
}
process.stdout.write(summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(n ?? 30)));
