// The run's last check (it runs in the 'alone' group, after every other file): each route's documented success
// answer was reached by some test, so each route had at least one real answer held against its contract
// (src/api/answer-check.ts, installed by test/helpers/app.ts). Only a run of the whole suite can tell.
import { describe, expect, inject, it } from 'vitest';
import { routeDocs } from '../../src/api/docs/openapi.js';
import { answeredInRun } from '../helpers/answers-reached.js';

describe.skipIf(!inject('wholeSuite'))('the suite reached every route', () => {
  it("answers every route's documented success status at least once, each checked against the route's contract", () => {
    const answered = answeredInRun(inject('runCacheDir'));
    const missing = Object.entries(routeDocs)
      .map(([route, contract]) => `${contract.response.status} ${route}`)
      .filter((success) => !answered.has(success));
    expect(missing).toEqual([]);
  });
});
