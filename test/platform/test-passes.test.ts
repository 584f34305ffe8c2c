// CI runs `npm test` on PGlite, then the storage suites (POSTGRES_SUITES, vitest.config.ts) again on the machine's
// Postgres, and the kill -9 suites (ALWAYS_ON_POSTGRES) on that server in the first pass. These checks keep the
// lists honest: a suite in the second pass must reach the database DATABASE_URL names (or it repeats the first pass
// word for word), every store of src/ must be driven by one of them, and the kill -9 suites must be on Postgres.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../helpers/worker-process.js';
import { ALWAYS_ON_POSTGRES, POSTGRES_SUITES } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What opens the database named by DATABASE_URL, or hands it on. */
const STORAGE_REACHES = [
  /from\s+['"][./]*helpers\/app\.js['"]/, // builds a test app (its database follows DATABASE_URL)
  /process\.env\.DATABASE_URL|process\.env\[['"]DATABASE_URL['"]\]/, // reads DATABASE_URL
];

function filesUnder(dir: string, match: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => relative(ROOT, join(ROOT, dir, f)))
    .filter((f) => match.test(f));
}

/** src/<area>/store.ts, src/<area>/x-store.ts: the modules that hold SQL (src/composition/stores.ts only assembles). */
const STORE_MODULES = filesUnder('src', /(^|[/-])store\.ts$/).filter((f) => f !== 'src/composition/stores.ts');

/** The file reaches it itself or through a module of its own folder that it imports (a suite split in parts). */
function reachesStorage(file: string): boolean {
  const text = readFileSync(join(ROOT, file), 'utf8');
  if (STORAGE_REACHES.some((pattern) => pattern.test(text))) return true;
  return [...text.matchAll(/from\s+['"]\.\/([\w-]+)\.js['"]/g)].some(([, name]) => {
    const sibling = join(ROOT, file, '..', `${name}.ts`);
    return STORAGE_REACHES.some((pattern) => pattern.test(readFileSync(sibling, 'utf8')));
  });
}

describe('the storage suites of the Postgres pass', () => {
  it.each(POSTGRES_SUITES)('%s reaches the database DATABASE_URL names', (file) => {
    expect(reachesStorage(file)).toBe(true);
  });

  it('leave out the kill -9 suites, which run on Postgres in the first pass', () => {
    expect(POSTGRES_SUITES.filter((f) => ALWAYS_ON_POSTGRES.includes(f))).toEqual([]);
  });

  it.each(STORE_MODULES)('drive %s (a storage suite in the test folder of its area)', (store) => {
    const area = store.split('/')[1];
    const suites = POSTGRES_SUITES.filter((f) => f.startsWith(`test/${area}/`));
    expect(suites.length, `no storage suite in test/${area}/`).toBeGreaterThan(0);
  });
});

describe('the files CI runs on Postgres in its PGlite pass', () => {
  it.each(ALWAYS_ON_POSTGRES)('%s runs on the worker-process stack (Postgres)', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    expect(text).toMatch(/from\s+['"][./]*helpers\/worker-process\.js['"]/);
    // a test app there is given the stack's database; one of its own would follow DATABASE_URL
    const apps = text.match(/buildTestApp\(/g) ?? [];
    const onStackDatabase = text.match(/buildTestApp\(\{\s*database\b/g) ?? [];
    expect(onStackDatabase.length).toBe(apps.length);
  });

  it("that stack's server, without DATABASE_URL, is the one .ci/run gives the Postgres pass", () => {
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    const url = process.env.DATABASE_URL ?? POSTGRES_URL;
    expect(ci).toContain(`PG_URL="${url}"`);
  });
});
