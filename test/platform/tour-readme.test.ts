// README's "A short tour" and `npm run tour` (tools/tour/steps.ts) are one walkthrough: the same steps, titled the
// same, in the same order, each sending the same requests. CI runs the tour against `npm start`, so a README step
// that no longer works fails the build only while the two are held together here.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TOUR_STEPS } from '../../tools/tour/steps.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ReadmeStep {
  readonly number: number;
  readonly title: string;
  /** `METHOD /path` of each curl in the step's code, a repeated one once, `{}` for a path segment from a variable */
  readonly requests: readonly string[];
}

/** The requests a block of shell runs against paygate, in order of first use. */
function curlRequests(code: string): string[] {
  const requests: string[] = [];
  // a command continued with a trailing backslash is one line; a comment is not a command
  const lines = code
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.replace(/(^|\s)#\s.*$/, ''));
  for (const line of lines) {
    for (const command of line.split(/\bcurl\s/).slice(1)) {
      const url = /localhost:8080(\/[^\s'"?]*)/.exec(command);
      if (!url) continue;
      const method = /\s-X\s+([A-Z]+)/.exec(` ${command}`)?.[1] ?? (/\s(-d|--data)\s/.test(` ${command}`) ? 'POST' : 'GET');
      const path = url[1]!.replace(/\/\$\w+/g, '/{}');
      const request = `${method} ${path}`;
      if (!requests.includes(request)) requests.push(request);
    }
  }
  return requests;
}

/** README's tour: its steps are the lines `**<n>. <title>**`, each with the code blocks up to the next step. */
function readmeTourSteps(readme: string): ReadmeStep[] {
  const start = readme.indexOf('\n## A short tour\n');
  if (start < 0) throw new Error('README has no "## A short tour" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const heads = [...section.matchAll(/^\*\*(\d+)\. (.+?)\.?\*\*/gm)];
  return heads.map((head, i) => {
    const body = section.slice(head.index + head[0].length, heads[i + 1]?.index ?? section.length);
    const code = [...body.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).join('\n');
    return { number: Number(head[1]), title: head[2]!, requests: curlRequests(code) };
  });
}

/** A tour step's requests as README writes them: a path parameter is a shell variable there. */
const asReadmeWrites = (request: string) => request.replace(/\{\w+\}/g, '{}');

describe("README's short tour and npm run tour", () => {
  const readme = readmeTourSteps(readFileSync(`${ROOT}README.md`, 'utf8'));

  it('have the same steps, titled the same, in the same order', () => {
    expect(readme.map((s) => s.title)).toEqual(TOUR_STEPS.map((s) => s.title));
  });

  it('number README steps 1, 2, 3, ... as the tour prints them', () => {
    expect(readme.map((s) => s.number)).toEqual(readme.map((_, i) => i + 1));
  });

  it('send the same requests in each step', () => {
    const mismatches = TOUR_STEPS.flatMap((step, i) => {
      const tour = step.requests.map(asReadmeWrites);
      const written = readme[i]?.requests ?? [];
      return JSON.stringify(tour) === JSON.stringify(written) ? [] : [{ step: `${i + 1}. ${step.title}`, tour, readme: written }];
    });
    expect(mismatches).toEqual([]);
  });

  it('reads steps and requests as README writes them', () => {
    const sample = [
      '## A short tour',
      '',
      '**1. Make a thing.** Some words:',
      '```sh',
      'X=$(curl -s localhost:8080/admin/v1/things -H "authorization: Bearer $T" \\',
      "  -d '{}' | field id)   # curl localhost:8080/in/a/comment",
      'curl -si -u "$K" -X PUT localhost:8080/v2/things/$X/parts -d \'{}\'',
      '```',
      '',
      '**2. Read it**',
      '```sh',
      'curl -s -u "$K" \'localhost:8080/v2/things/$X?page=1\'; curl -s localhost:8080/v2/things/$X',
      'for i in 1 2; do curl -s localhost:8080/clock/advance -d "{}"; done',
      'node --import tsx tools/something.ts &',
      '```',
      '',
      '## Errors',
      '```sh',
      'curl localhost:8080/not/a/step',
      '```',
    ].join('\n');
    expect(readmeTourSteps(`intro\n${sample}`)).toEqual([
      { number: 1, title: 'Make a thing', requests: ['POST /admin/v1/things', 'PUT /v2/things/{}/parts'] },
      { number: 2, title: 'Read it', requests: ['GET /v2/things/{}', 'POST /clock/advance'] },
    ]);
    expect(asReadmeWrites('GET /v2/receipt/{receipt_id}/events')).toBe('GET /v2/receipt/{}/events');
  });
});
