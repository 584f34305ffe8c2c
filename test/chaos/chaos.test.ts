// The chaos suite's CI variant (issue 13): `npm run chaos`'s driver with 100 mixed flows and 6 kills -9 of a random
// process of the split stack (API, worker, engine, sandbox PGs), then its checks: 0 stuck, 0 lost, 0 duplicated,
// refunds and webhooks matching, no failed workflow. The split processes share Postgres (PGlite cannot be shared),
// so it runs only with DATABASE_URL (CI's second pass). The driver runs in a process group of its own, killed
// with SIGKILL at the hard timeout, so a hung run cannot hang the suite or leave processes behind.
import { expect, it } from 'vitest';
import { runScript } from '../helpers/script-process.js';

const DATABASE_URL = process.env.DATABASE_URL;
const FLOWS = 100;
const KILLS = 6;
// Typically 1.5 minutes. The settle bound covers the worst cases with room under load: a charge's reconcile (the 45 s
// call window and the 15 s sweep), a webhook delivery claimed by a worker killed mid attempt (its 60 s lease).
// The driver stops itself at RUN_TIMEOUT_S; the group is killed a little later whatever happens.
const SETTLE_S = 330;
const RUN_TIMEOUT_S = 480;
const TEST_TIMEOUT_MS = (RUN_TIMEOUT_S + 30) * 1000;

const title = DATABASE_URL
  ? `chaos: ${FLOWS} flows with ${KILLS} kills -9 of API, worker, engine or sandbox end with 0 stuck, 0 lost, 0 duplicated`
  : 'chaos: skipped, DATABASE_URL is not set (the split processes need a shared Postgres)';

it.skipIf(!DATABASE_URL)(
  title,
  async () => {
    const { code, output } = await runScript(
      'chaos/run.ts',
      [
        '--flows',
        String(FLOWS),
        '--kills',
        String(KILLS),
        '--concurrency',
        '8',
        '--settle',
        String(SETTLE_S),
        '--timeout',
        String(RUN_TIMEOUT_S),
      ],
      { ...process.env },
      TEST_TIMEOUT_MS - 10_000,
    );
    const count = (label: string): number => {
      const match = new RegExp(`\\| ${label.replace(/[()]/g, '\\$&')}[^|]* \\| (\\d+) \\|`).exec(output);
      if (!match) throw new Error(`no "${label}" row in the chaos output:\n${output.slice(-4000)}`);
      return Number(match[1]);
    };
    // Exit 1 also comes from refused flows, which the suite reports as defects to look at (the known ones, retries
    // under an Idempotency-Key after the API died mid-request, are fixed); the issue's own counts are asserted one by
    // one below, so a refusal of a kind not yet seen is reported in the output without failing CI on its own.
    expect(code === 0 || code === 1, output.slice(-6000)).toBe(true);
    const kills = /kills: (\d+) \(/.exec(output);
    expect(Number(kills?.[1]), output.slice(-6000)).toBeGreaterThanOrEqual(KILLS);
    expect(output).toContain(`chaos: ${FLOWS} flows`);
    expect(count('stuck')).toBe(0);
    expect(count('lost')).toBe(0);
    expect(count('duplicated')).toBe(0);
    expect(count('refunds not matching the PG')).toBe(0);
    expect(count('webhook deliveries never accepted')).toBe(0);
    expect(count('failed workflows')).toBe(0);
    expect(count('processes crashed on their own')).toBe(0);
  },
  TEST_TIMEOUT_MS,
);
