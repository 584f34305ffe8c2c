// README's "A short tour" and `npm run tour` (tools/tour/steps.ts) are one walkthrough: the same steps, titled the
// same, in the same order, each sending the same requests with README's bodies. CI runs the tour against `npm start`,
// and the tour compares each body it sends with README's (tools/tour/readme.ts), so a README step that no longer
// works, or a README value the tour does not send, fails the build while the two are held together here.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bodyDifference, readmeTourSteps, shellWord } from '../../tools/tour/readme.js';
import { TOUR_STEPS } from '../../tools/tour/steps.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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
      const written = (readme[i]?.requests ?? []).map((r) => r.request);
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
      {
        number: 1,
        title: 'Make a thing',
        requests: [
          { request: 'POST /admin/v1/things', body: {} },
          { request: 'PUT /v2/things/{}/parts', body: {} },
        ],
      },
      { number: 2, title: 'Read it', requests: [{ request: 'GET /v2/things/{}' }, { request: 'POST /clock/advance', body: {} }] },
    ]);
    expect(asReadmeWrites('GET /v2/receipt/{receipt_id}/events')).toBe('GET /v2/receipt/{}/events');
  });

  it("reads each request's body as the shell sends it: quotes, spliced variables, a body in a variable set earlier", () => {
    expect(shellWord(`'{"a":"'$X'","b":1}' rest`, 0)).toEqual({ word: '{"a":"$X","b":1}', end: 20 });
    expect(shellWord(String.raw`"x $Y \"z\""`, 0).word).toBe('x $Y "z"');
    const sample = [
      '## A short tour',
      '**1. Set it**',
      '```sh',
      `CHARGE='{"billing_key":"'$KEY'","price":9900}'`,
      `curl -s localhost:8080/v2/pay -d "$CHARGE"`,
      '```',
      '**2. Again**',
      '```sh',
      `curl -s localhost:8080/v2/pay -d "$CHARGE"`,
      `curl -s localhost:8080/v2/multi -d '{`,
      `  "a": 1, "b": "'"$B"'" }'`,
      '```',
    ].join('\n');
    const steps = readmeTourSteps(`x\n${sample}`);
    expect(steps[0]!.requests).toEqual([{ request: 'POST /v2/pay', body: { billing_key: '$KEY', price: 9900 } }]);
    expect(steps[1]!.requests).toEqual([
      { request: 'POST /v2/pay', body: { billing_key: '$KEY', price: 9900 } },
      { request: 'POST /v2/multi', body: { a: 1, b: '$B' } },
    ]);
  });

  it('every body README sends is JSON the tour can compare with its own', () => {
    const unreadable = readme.flatMap((step) =>
      step.requests
        .filter((r) => /^(POST|PUT|PATCH) /.test(r.request) && r.body === undefined)
        .map((r) => `${step.number}. ${r.request}`),
    );
    // the requests README sends without a body: none of them may be one whose -d the parser could not read
    const readmeText = readFileSync(`${ROOT}README.md`, 'utf8');
    for (const request of unreadable) {
      const path = request.split(' ')[2]!.replace(/\{\}/g, '');
      const sent = new RegExp(`localhost:8080${path.replace(/[/.]/g, '\\$&')}[^\\n]*\\s-d\\s`).test(readmeText);
      expect(sent, `${request} sends a -d body README's parser could not read`).toBe(false);
    }
    expect(readme.flatMap((s) => s.requests).filter((r) => r.body !== undefined).length).toBeGreaterThanOrEqual(15);
  });

  it("compares bodies key by key; shell variables and the run's own values stand for anything", () => {
    const run = (v: unknown) => typeof v === 'string' && v.startsWith('tour-');
    expect(bodyDifference({ a: '$X', b: 1, c: 'order-1' }, { a: 'bk_1', b: 1, c: 'tour-9-order-1' }, run)).toBeUndefined();
    expect(bodyDifference({ card_expire_year: '31' }, { card_expire_year: '32' }, run)).toBe(
      'body.card_expire_year: README "31", the tour "32"',
    );
    expect(bodyDifference({ a: 1 }, { a: 1, b: 2 }, run)).toBe("body: README's keys a; the tour's a, b");
    expect(bodyDifference(undefined, { a: 1 }, run)).toBe('body: README undefined, the tour {"a":1}');
    expect(bodyDifference({ m: { x: [1, 2] } }, { m: { x: [1, 3] } }, run)).toBe('body.m.x[1]: README 2, the tour 3');
  });
});
