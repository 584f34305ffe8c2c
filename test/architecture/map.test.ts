// ARCHITECTURE.md is the map of the code: it lists every folder of src/ (and of src/platform/), and no path it or a
// design page under docs/ names is missing from the tree. A move that forgets the map fails here.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AREAS, ROOT } from '../../tools/import-rules.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const folders = (dir: string) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${dir}/${e.name}/`);
const markdownUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
  );

/** Repository paths a document names in backticks (`src/...`, `test/...`, ...), without globs or placeholders. */
function namedPaths(text: string): string[] {
  const found = text.matchAll(/`((?:src|test|engine|tools|bench|chaos|clients|docs|bin)\/[^`\s]*)`/g);
  return [...found].map((m) => m[1]!.replace(/[.,;:)]+$/, '')).filter((p) => !p.includes('*') && !p.includes('<'));
}

describe('ARCHITECTURE.md', () => {
  const map = read('ARCHITECTURE.md');

  it('lists every folder of src/ and of src/platform/', () => {
    const unlisted = [...folders('src'), ...folders('src/platform')].filter((f) => !map.includes(`\`${f}\``));
    expect(unlisted).toEqual([]);
  });

  it('gives every area a row', () => {
    expect(AREAS.filter((a) => !map.includes(`| \`src/${a}/\` |`))).toEqual([]);
  });

  it('names no path that is not in the tree, nor does any page of docs/', () => {
    const documents = ['ARCHITECTURE.md', ...markdownUnder('docs')];
    const missing = documents.flatMap((doc) =>
      namedPaths(read(doc)).flatMap((p) => (existsSync(join(ROOT, p)) ? [] : [`${doc}: ${p}`])),
    );
    expect(missing).toEqual([]);
  });

  it('reads paths as the documents write them', () => {
    expect(namedPaths('see `src/payments/charges.ts`, `src/<area>/` and `test/**/*.ts`; `src/api/`.')).toEqual([
      'src/payments/charges.ts',
      'src/api/',
    ]);
  });
});
