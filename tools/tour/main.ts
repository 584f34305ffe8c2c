// `npm run tour`: README's "A short tour" run against a running paygate in sandbox mode (`npm start`), step by step,
// each request and answer printed; it stops with a non-zero exit at the first step that does not answer as README
// documents. PAYGATE_URL (default http://localhost:8080) names the server, ADMIN_TOKEN is the server's admin token.
// The webhook receiver it starts listens on 127.0.0.1 (a free port) until the tour ends, so the server must be on
// this machine.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readmeTourSteps } from './readme.js';
import { WebhookReceiver } from './receiver.js';
import { TOUR_STEPS } from './steps.js';
import { Tour, TourFailure } from './tour.js';

const out = (line: string) => process.stdout.write(`${line}\n`);

/** Exit 2: the tour could not begin (no token, no server, not sandbox mode); exit 1: a step failed. */
function stop(message: string): never {
  process.stderr.write(`npm run tour: ${message}\n`);
  process.exit(2);
}

const started = performance.now();
const seconds = () => ((performance.now() - started) / 1000).toFixed(1);

const target = process.env.PAYGATE_URL?.trim() || 'http://localhost:8080';
if (!URL.canParse(target)) stop(`PAYGATE_URL is not a URL: ${target}`);
const baseUrl = new URL(target);
const adminToken = process.env.ADMIN_TOKEN?.trim();
if (!adminToken) {
  stop(
    "ADMIN_TOKEN is not set. The tour needs the running server's admin token: `ADMIN_TOKEN=<token> npm run tour`. " +
      '`npm start` without ADMIN_TOKEN prints the token it generated on its first line; or start it with ' +
      '`ADMIN_TOKEN=$(openssl rand -hex 24)` exported in both terminals.',
  );
}

/** The sandbox clock, read with the admin token: proves the server is there, in sandbox mode, and takes the token. */
async function sandboxYear(): Promise<number> {
  let response: Response;
  try {
    response = await fetch(new URL('/sandbox/v1/clock', baseUrl), {
      headers: { authorization: `Bearer ${adminToken}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    stop(`no answer from ${baseUrl.origin} (${(err as Error).message}): start it with \`npm start\`, or set PAYGATE_URL`);
  }
  if (response.status === 401) {
    stop(`the server at ${baseUrl.origin} refused ADMIN_TOKEN (401): give the token the server was started with`);
  }
  if (response.status === 404) {
    stop(
      `the server at ${baseUrl.origin} is not in sandbox mode with the embedded engine (no /sandbox/v1/clock): the tour needs \`npm start\``,
    );
  }
  const body = (await response.json().catch(() => ({}))) as { now?: unknown };
  if (response.status !== 200 || typeof body.now !== 'string') {
    stop(`GET /sandbox/v1/clock answered ${response.status} ${JSON.stringify(body)}`);
  }
  return Number(body.now.slice(0, 4));
}

const year = await sandboxYear();
// bound now: the steps that register webhook URLs come before the one that starts trusting its deliveries
const receiver = await WebhookReceiver.listen(0);
const tour = new Tour(
  baseUrl,
  adminToken,
  readmeTourSteps(readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8')),
  receiver,
  out,
);
out(`paygate tour against ${baseUrl.origin} (sandbox clock in ${year}); run ${tour.run}`);

let failed = false;
for (const [index, step] of TOUR_STEPS.entries()) {
  try {
    await tour.runStep(index, step);
  } catch (err) {
    failed = true;
    out('');
    out(`✗ step ${index + 1} "${step.title}" did not answer as README documents`);
    if (err instanceof TourFailure) {
      out(`  expected: ${err.expected}`);
      out(`  came:     ${err.came}`);
    } else out(`  ${(err as Error).stack ?? String(err)}`);
    break;
  }
}
await receiver.close();
out('');
if (failed) {
  out(`tour failed after ${seconds()} s`);
  process.exit(1);
}
out(`✓ tour passed: ${TOUR_STEPS.length} steps in ${seconds()} s`);
