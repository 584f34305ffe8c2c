// The layering of ARCHITECTURE.md holds on the real tree, and the checker does catch each kind of breach.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AREAS,
  checkFileImports,
  checkImports,
  importCircles,
  importsOf,
  LAYERS,
  PURE_FILES,
  ROOT,
  runtimeClosure,
  type Import,
} from '../../tools/import-rules.js';

const local = (target: string, typeOnly = false): Import => ({ specifier: target, target, local: true, typeOnly });
const pkg = (name: string): Import => ({ specifier: name, target: name, local: false, typeOnly: false });

describe('import rules', () => {
  it('hold on every file of src/, engine/src/, chaos/, tools/tour/ and worker.ts', () => {
    expect(checkImports()).toEqual([]);
  });

  it('the worker process loads neither Fastify nor the API', () => {
    const { files, packages } = runtimeClosure('worker.ts');
    expect(files.has('src/composition/index.ts')).toBe(true);
    expect(files.has('src/activities/index.ts')).toBe(true);
    expect(packages.has('fastify')).toBe(false);
    expect([...files].filter((f) => f.startsWith('src/api/'))).toEqual([]);
  });

  it('reads static, type-only and re-export imports', () => {
    const imports = importsOf('src/composition/stores.ts');
    expect(imports.map((i) => i.target)).toContain('src/payments/index.ts');
    expect(imports.find((i) => i.target === 'src/platform/security/keyring.ts')?.typeOnly).toBe(true);
    expect(importsOf('src/payments/index.ts').map((i) => i.target)).toContain('src/payments/receipts-store.ts');
  });

  it.each([
    ['src/payments/receipts-store.ts', local('src/activities/verification.ts')],
    ['src/payments/receipts-store.ts', local('src/workflows/verification.ts')],
    ['src/payments/receipts-store.ts', local('src/api/app.ts')],
    ['src/payments/receipts-store.ts', local('src/composition/stores.ts', true)],
    ['src/payments/billing-rules.ts', local('src/gateways/types.ts')],
    ['src/payments/billing-rules.ts', local('src/payments/receipts-store.ts')],
    ['src/payments/billing-rules.ts', pkg('undici')],
    ['src/payments/billing-rules.ts', pkg('node:fs')],
    ['src/payments/billing-rules.ts', pkg('@temporalio/client')],
    ['src/platform/errors.ts', pkg('kysely')],
    ['src/platform/temporal/client.ts', local('src/verification/contract.ts')],
    ['src/platform/db/db.ts', local('src/payments/receipts-store.ts', true)],
    ['src/api/routes/payments.ts', local('src/api/routes/escrow.ts')],
    ['src/payments/charges.ts', pkg('fastify')],
    ['src/payments/charges.ts', local('src/api/auth.ts')],
    ['src/payments/charges.ts', local('src/workflows/verification.ts')],
    ['src/payments/charges.ts', local('src/activities/payments.ts', true)],
    ['src/verification/service.ts', local('src/workflows/verification.ts', true)],
    ['src/escrow/service.ts', local('src/sandbox/escrow-pg.ts')],
    ['src/workflows/verification.ts', local('src/activities/verification.ts')],
    ['src/workflows/verification.ts', local('src/verification/service.ts', true)],
    ['src/workflows/verification.ts', pkg('@temporalio/client')],
    ['src/verification/contract.ts', local('src/gateways/types.ts')],
    ['src/verification/contract.ts', local('src/verification/store.ts', true)],
    ['src/composition/index.ts', local('src/api/app.ts')],
    ['src/activities/escrow.ts', local('src/composition/services.ts')],
    ['src/composition/index.ts', local('src/sandbox/server.ts')],
    ['src/sandbox/card-pg.ts', local('src/payments/charges.ts')],
    ['engine/src/engine.ts', local('src/platform/errors.ts')],
    ['tools/tour/steps.ts', local('src/payments/billing-rules.ts')],
    ['src/dashboard/pages/auth.ts', local('src/api/routes/projects.ts')],
    ['src/dashboard/pages/escrow.ts', local('src/escrow/store.ts')],
    ['src/dashboard/pages/escrow.ts', local('src/escrow/index.ts')],
    ['src/dashboard/context.ts', local('src/projects/store.ts', true)],
    ['src/escrow/service.ts', local('src/payments/receipts.ts')],
    ['src/workflows/escrow.ts', local('src/escrow/index.ts', true)],
    ['src/dashboard/pages/escrow.ts', local('src/gateways/sandbox-escrow-control.ts')],
    // a lower layer up to a higher one, or one area to another beside it (LAYERS), even as a type
    ['src/gateways/types.ts', local('src/escrow/rules.ts', true)],
    ['src/gateways/types.ts', local('src/payments/receipt-rules.ts', true)],
    ['src/upstream/rules.ts', local('src/payments/receipt-rules.ts', true)],
    ['src/upstream/card-gateway.ts', local('src/payments/billing-rules.ts')],
    ['src/payments/receipt-rules.ts', local('src/escrow/rules.ts', true)],
    ['src/escrow/contract.ts', local('src/verification/contract.ts', true)],
    ['src/schedules/service.ts', local('src/reserves/index.ts', true)],
    ['src/webhooks/service.ts', local('src/gateways/index.ts', true)],
    ['src/activities/index.ts', local('src/composition/services.ts', true)],
    ['src/dashboard/pages/auth.ts', local('src/api/auth.ts')],
    ['src/dashboard/index.ts', local('src/api/errors.ts', true)],
  ])('%s may not import %j', (file, imp) => {
    expect(checkFileImports(file, [imp]).length).toBeGreaterThanOrEqual(1);
  });

  it.each([
    ['src/workflows/verification.ts', local('src/activities/verification.ts', true)],
    ['src/workflows/verification.ts', local('src/verification/contract.ts')],
    ['src/workflows/webhooks.ts', local('src/webhooks/rules.ts')],
    ['src/verification/store.ts', local('src/verification/contract.ts')],
    ['src/platform/ip.ts', pkg('node:net')],
    ['src/payments/charges.ts', local('src/payments/receipts-store.ts')],
    ['src/escrow/service.ts', local('src/payments/index.ts')],
    ['src/sandbox/card-pg.ts', local('src/gateways/card-rules.ts')],
    ['src/escrow/rules.ts', local('src/payments/receipt-rules.ts', true)],
    ['src/escrow/rules.ts', local('src/gateways/rules.ts', true)],
    ['src/payments/charges.ts', local('src/upstream/index.ts', true)],
    ['src/escrow/contract.ts', local('src/platform/temporal/messages.ts', true)],
    ['src/composition/services.ts', local('src/activities/index.ts', true)],
    ['src/api/app.ts', local('src/dashboard/index.ts')],
    ['src/dashboard/context.ts', local('src/projects/index.ts', true)],
  ])('%s may import %j', (file, imp) => {
    expect(checkFileImports(file, [imp])).toEqual([]);
  });

  it('ARCHITECTURE.md names each layer in its order and every pure module beyond the naming convention', () => {
    const doc = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Layers'), doc.indexOf('## Pure rules'));
    const listed = [...section.matchAll(/^\d+\. (.+)$/gm)].map((m) => [...m[1]!.matchAll(/`([a-z-]+)`/g)].map((n) => n[1]));
    expect(listed).toEqual(LAYERS);
    const pure = doc.slice(doc.indexOf('## Pure rules'));
    expect([...PURE_FILES].filter((file) => !pure.includes(`\`${file}\``))).toEqual([]);
  });

  it('every area has its public module', () => {
    expect(AREAS.filter((area) => !existsSync(join(ROOT, `src/${area}/index.ts`)))).toEqual([]);
  });

  it('reports a deep import into another area, not its index.ts, rules or contracts', () => {
    const rules = (file: string, imp: Import) => checkFileImports(file, [imp]).map((v) => v.rule);
    const publicModuleOnly = /only through its public module/;
    // another area's service or store, even as a type, from an area or from a layer above
    expect(rules('src/reserves/planner.ts', local('src/payments/refunds.ts'))).toEqual([expect.stringMatching(publicModuleOnly)]);
    expect(rules('src/reserves/planner.ts', local('src/payments/refunds-store.ts', true))).toEqual([
      expect.stringMatching(publicModuleOnly),
    ]);
    expect(rules('src/api/routes/reserves.ts', local('src/reserves/planner.ts'))).toEqual([
      expect.stringMatching(publicModuleOnly),
    ]);
    // its public module, its rules and contracts; and any file of one's own area
    expect(rules('src/reserves/planner.ts', local('src/payments/index.ts'))).toEqual([]);
    expect(rules('src/reserves/planner.ts', local('src/payments/refund-rules.ts'))).toEqual([]);
    expect(rules('src/reserves/planner.ts', local('src/payments/refund-contract.ts'))).toEqual([]);
    expect(rules('src/reserves/planner.ts', local('src/reserves/store.ts'))).toEqual([]);
    expect(rules('src/api/routes/reserves.ts', local('src/reserves/index.ts'))).toEqual([]);
  });

  it('finds an import circle, type-only imports included', () => {
    const graph: Record<string, string[]> = { a: ['b'], b: ['c'], c: ['a', 'd'], d: [] };
    expect(importCircles(Object.keys(graph), (f) => graph[f] ?? [])).toEqual([['a', 'b', 'c', 'a']]);
    expect(importCircles(['a', 'b', 'd'], (f) => graph[f] ?? [])).toEqual([]);
    // on real files: a type-only import is an edge like any other
    const typeOnly = importsOf('src/payments/receipts.ts').find((i) => i.target === 'src/platform/temporal/workflow-calls.ts');
    expect(typeOnly?.typeOnly).toBe(true);
    expect(importCircles(['src/payments/receipts.ts', 'src/platform/temporal/workflow-calls.ts'])).toEqual([]);
  });
});
