// What the workflow bundle holds. The SDK evaluates every module of the bundle again for each workflow run the worker
// holds (each run gets its own module state), so whatever a workflow imports is paid per run in CPU and memory. A
// request-validation library reached through a rules module once doubled the CPU of a schedule's charge and held
// 1.5 GB in a worker with 500 cached runs (docs/benchmarks.md). The workflows import types of everything else.
import { describe, expect, it } from 'vitest';
import { paygateWorkflowBundle } from '../helpers/temporal.js';

/** The SDK's workflow side and what it brings. */
const WORKFLOW_PACKAGES = ['@temporalio/common', '@temporalio/workflow', 'long', 'ms', 'nexus-rpc'];

describe('the workflow bundle', () => {
  it("holds no package but the SDK's workflow side, and of src/ the workflows, their contracts and their rules", async () => {
    const { code } = await paygateWorkflowBundle();
    const packages = new Set([...code.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]!));
    expect([...packages].filter((name) => !WORKFLOW_PACKAGES.includes(name))).toEqual([]);
    const modules = new Set([...code.matchAll(/\.\/src\/([\w/.-]+\.ts)\b/g)].map((m) => m[1]!));
    expect(modules.size).toBeGreaterThan(5);
    const unexpected = [...modules].filter(
      (m) =>
        !m.startsWith('workflows/') &&
        !/(^|\/)([a-z-]+-)?(rules|contract)\.ts$/.test(m) &&
        !['escrow/status.ts', 'gateways/declined.ts', 'platform/temporal/messages.ts', 'webhooks/retry-ladder.ts'].includes(m),
    );
    expect(unexpected).toEqual([]);
  });
});
