// The flow benchmark's harness keeps working: `npm run bench:flows` with a few flows starts paygate as `npm start`
// does and the baseline, drives two flows against both, and prints their rows. Figures are not judged here (a
// benchmark prints them; these machines are shared and noisy), only that every flow ran and answered.
import { expect, it } from 'vitest';
import { runScript } from '../helpers/script-process.js';

it('bench:flows runs charge and receipt lookup against paygate and the baseline and prints their rows', async () => {
  const { code, output } = await runScript(
    'bench/flows.ts',
    ['-n', '3', '--callers', '2', '--only', 'charge,receipt'],
    { ...process.env, LOG_LEVEL: 'warn' },
    280_000,
  );
  expect(code, output).toBe(0);
  for (const flow of ['charge', 'receipt']) {
    const row = output.split('\n').find((l) => l.startsWith(`| ${flow} |`));
    expect(row, output).toBeDefined();
    // throughput on both sides and a ratio: numbers, not dashes
    expect(row).toMatch(new RegExp(`^\\| ${flow} \\| [\\d.]+ /s \\| [\\d.]+ /s \\| [\\d.]+ \\|`));
  }
  expect(output).toContain('measured 2 flows on paygate and the baseline; none failed');
}, 300_000);
