// One Node version: package.json's engines name one major line, and .nvmrc, the Docker image, the embedded engine's
// package and README's quick start name the same one; this process (CI's Node) is inside it; and every package of
// package-lock.json accepts every Node that range admits, so `npm install` on any of them prints no EBADENGINE
// warning. A dependency upgrade that wants a newer Node fails here, naming the package.
//
// semver is fastify's own dependency (plugin version checks), so it is installed wherever paygate is.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(`${ROOT}${file}`, 'utf8');
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  subset(sub: string, dom: string): boolean;
};

interface LockPackage {
  readonly version?: string;
  readonly engines?: { readonly node?: string };
}

const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
const engines = pkg.engines.node;
/** `>=20.19 <21`: a floor inside one major line, and the next major as the ceiling */
const range = /^>=(\d+)\.(\d+)(?:\.\d+)? <(\d+)$/.exec(engines);

describe('the Node version', () => {
  it('package.json names one major line, and this Node is inside it', () => {
    expect(range, `engines.node is ${engines}`).not.toBeNull();
    const major = Number(range![1]);
    expect(Number(range![3])).toBe(major + 1);
    expect(semver.satisfies(process.versions.node, engines), `Node ${process.versions.node} outside ${engines}`).toBe(true);
  });

  it('.nvmrc, the Docker image, the engine package and README name the same line', () => {
    const major = range![1]!;
    expect(read('.nvmrc').trim()).toBe(major);
    expect(read('Dockerfile')).toMatch(new RegExp(`^FROM node:${major}-`, 'm'));
    expect((JSON.parse(read('engine/package.json')) as { engines: { node: string } }).engines.node).toBe(engines);
    const quickStart = read('README.md').split('## Quick start')[1]!.split('\n## ')[0]!;
    expect(quickStart).toContain(`Node.js ${major} (${range![1]}.${range![2]} or a later ${major}.x`);
  });

  it('package-lock.json is in step with package.json and every package in it accepts the whole range', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockPackage> };
    expect(lock.packages['']!.engines?.node).toBe(engines);
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.engines?.node !== undefined)
      .filter(([, entry]) => !semver.subset(engines, entry.engines!.node!))
      .map(([path, entry]) => `${path}@${entry.version}: node ${entry.engines!.node}`);
    expect(refusing).toEqual([]);
  });
});
