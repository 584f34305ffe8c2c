// CI's Postgres pass leaves out the files of DATABASE_INDEPENDENT and ALWAYS_ON_POSTGRES (vitest.config.ts): each must
// be one that DATABASE_URL cannot change, or one that runs on CI's Postgres server anyway, or code that stores would
// run on PGlite alone.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../helpers/worker-process.js';
import { ALWAYS_ON_POSTGRES, DATABASE_INDEPENDENT } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What opens the database named by DATABASE_URL, or hands it on: a file that imports or does this runs on both engines. */
const STORAGE_REACHES = [
  { what: 'builds a test app (its database follows DATABASE_URL)', pattern: /from\s+['"][./]*helpers\/app\.js['"]/ },
  { what: 'starts the kill -9 stack (Postgres)', pattern: /from\s+['"][./]*helpers\/worker-process\.js['"]/ },
  { what: 'opens a database itself', pattern: /from\s+['"][./]*src\/platform\/db\/db\.js['"]/ },
  { what: 'makes stores over a database', pattern: /from\s+['"][./]*src\/composition\/stores\.js['"]/ },
  { what: 'reads DATABASE_URL', pattern: /process\.env\.DATABASE_URL|process\.env\[['"]DATABASE_URL['"]\]/ },
  { what: 'hands its whole environment to a child process', pattern: /\.\.\.process\.env\b/ },
];

describe('the files CI runs on PGlite only', () => {
  it.each(DATABASE_INDEPENDENT)('%s never reaches the database DATABASE_URL names', (file) => {
    const text = readFileSync(`${ROOT}${file}`, 'utf8');
    const reaches = STORAGE_REACHES.filter(({ pattern }) => pattern.test(text)).map(({ what }) => what);
    expect(reaches).toEqual([]);
  });
});

describe('the files CI runs on Postgres in its PGlite pass', () => {
  it.each(ALWAYS_ON_POSTGRES)('%s runs on the worker-process stack (Postgres)', (file) => {
    const text = readFileSync(`${ROOT}${file}`, 'utf8');
    expect(text).toMatch(/from\s+['"][./]*helpers\/worker-process\.js['"]/);
    // a test app there is given the stack's database; one of its own would follow DATABASE_URL
    const apps = text.match(/buildTestApp\(/g) ?? [];
    const onStackDatabase = text.match(/buildTestApp\(\{\s*database\b/g) ?? [];
    expect(onStackDatabase.length).toBe(apps.length);
  });

  it("that stack's server, without DATABASE_URL, is the one .ci/run gives the Postgres pass", () => {
    const ci = readFileSync(`${ROOT}.ci/run`, 'utf8');
    const url = process.env.DATABASE_URL ?? POSTGRES_URL;
    expect(ci).toContain(`PG_URL="${url}"`);
  });
});
