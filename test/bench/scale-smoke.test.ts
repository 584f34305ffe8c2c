// The scale benchmark's harness keeps working: `npm run bench:scale` with a few flows starts the split deployment
// (engine, sandbox PGs, one then two APIs and workers) on DATABASE_URL's Postgres, drives the charge and the
// verification through every API, prints a row per flow and N, the Temporal actions of one flow of each kind and
// each flow with one caller beside its API's event-loop delay, and finds every order charged exactly once. Figures
// are not judged (a benchmark prints them). The split processes share a Postgres (PGlite cannot be shared): without
// DATABASE_URL it skips; CI's Postgres pass runs it.
import { expect, it } from 'vitest';
import { runScript } from '../helpers/script-process.js';

const DATABASE_URL = process.env.DATABASE_URL;

it.skipIf(!DATABASE_URL)(
  DATABASE_URL
    ? 'bench:scale runs charge and verification on 1 and 2 API + worker processes and finds nothing charged twice'
    : 'bench:scale: skipped, DATABASE_URL is not set (the split processes need a shared Postgres)',
  async () => {
    const { code, output } = await runScript(
      'bench/scale.ts',
      ['-n', '3', '--callers', '2', '--processes', '1,2'],
      { ...process.env, DATABASE_URL },
      280_000,
    );
    expect(code, output).toBe(0);
    for (const flow of ['charge', 'verification']) {
      for (const n of [1, 2]) {
        // throughput and latency as numbers, not dashes
        expect(output, output).toMatch(new RegExp(`^\\| ${flow} \\| ${n} \\| [\\d.]+ \\| [\\d.]+ / [\\d.]+ \\|`, 'm'));
      }
    }
    // one flow of each kind on the fresh engine, and what it added to the histories: counts, not dashes
    for (const flow of ['charge', 'verification \\(five calls\\)', 'escrow shipping start', 'webhook test until delivered'])
      expect(output).toMatch(new RegExp(`^\\| ${flow} \\|( \\d+ \\|){8}$`, 'm'));
    // one caller on the first API of the first N, with that API's event-loop delay: numbers, not dashes
    for (const flow of ['charge', 'verification'])
      expect(output).toMatch(
        new RegExp(`^\\| ${flow} \\| [\\d.]+ / [\\d.]+ ms \\| [\\d.]+ ms \\| [\\d.]+ ms \\| [\\d.]+ ms \\|$`, 'm'),
      );
    // at each N, 3 measured and 3 of warm-up (capped at -n); at the first N, 3 more with one caller
    expect(output).toContain('charges: 15 orders, 15 receipts, 15 PG charge executions');
    expect(output).toContain('nothing charged twice: every order has one paid receipt and one PG charge');
  },
  300_000,
);
