// The layering of ARCHITECTURE.md holds on the real tree, and the checker does catch each kind of breach.
import { describe, expect, it } from 'vitest';
import { checkFileImports, checkImports, importsOf, runtimeClosure, type Import } from '../../tools/import-rules.js';

const local = (target: string, typeOnly = false): Import => ({ specifier: target, target, local: true, typeOnly });
const pkg = (name: string): Import => ({ specifier: name, target: name, local: false, typeOnly: false });

describe('import rules', () => {
  it('hold on every file of src/, engine/src/ and worker.ts', () => {
    expect(checkImports()).toEqual([]);
  });

  it('the worker process loads neither Fastify nor the API', () => {
    const { files, packages } = runtimeClosure('worker.ts');
    expect(files.has('src/wiring.ts')).toBe(true);
    expect(files.has('src/activities/index.ts')).toBe(true);
    expect(packages.has('fastify')).toBe(false);
    expect([...files].filter((f) => f.startsWith('src/api/'))).toEqual([]);
  });

  it('reads static, type-only and re-export imports', () => {
    const imports = importsOf('src/store/index.ts');
    expect(imports.map((i) => i.target)).toContain('src/store/receipts.ts');
    expect(imports.find((i) => i.target === 'src/security/keyring.ts')?.typeOnly).toBe(true);
  });

  it.each([
    ['src/store/receipts.ts', local('src/activities/verification.ts')],
    ['src/store/receipts.ts', local('src/workflows/verification.ts')],
    ['src/store/receipts.ts', local('src/api/app.ts')],
    ['src/domain/billing.ts', local('src/gateways/types.ts')],
    ['src/domain/billing.ts', local('src/store/receipts.ts')],
    ['src/domain/billing.ts', pkg('undici')],
    ['src/domain/billing.ts', pkg('node:fs')],
    ['src/domain/billing.ts', pkg('@temporalio/client')],
    ['src/api/routes/billing.ts', local('src/api/routes/cancel.ts')],
    ['src/services/charges.ts', pkg('fastify')],
    ['src/services/charges.ts', local('src/api/auth.ts')],
    ['src/services/charges.ts', local('src/workflows/verification.ts')],
    ['src/workflows/verification.ts', local('src/activities/verification.ts')],
    ['src/workflows/verification.ts', pkg('@temporalio/client')],
    ['src/contracts/verification.ts', local('src/gateways/types.ts')],
    ['src/wiring.ts', local('src/sandbox/server.ts')],
    ['engine/src/engine.ts', local('src/domain/errors.ts')],
    ['src/dashboard/pages/auth.ts', local('src/api/routes/admin.ts')],
    ['src/dashboard/pages/escrow.ts', local('src/store/escrow.ts')],
    ['src/dashboard/pages/escrow.ts', local('src/gateways/sandbox-escrow-control.ts')],
  ])('%s may not import %j', (file, imp) => {
    expect(checkFileImports(file, [imp])).toHaveLength(1);
  });

  it.each([
    ['src/workflows/verification.ts', local('src/activities/verification.ts', true)],
    ['src/services/verifications.ts', local('src/workflows/verification.ts', true)],
    ['src/store/verifications.ts', local('src/contracts/verification.ts')],
    ['src/domain/ip.ts', pkg('node:net')],
    ['src/services/charges.ts', local('src/store/receipts.ts')],
    ['src/dashboard/context.ts', local('src/store/projects.ts', true)],
    ['src/dashboard/pages/auth.ts', local('src/api/auth.ts')],
  ])('%s may import %j', (file, imp) => {
    expect(checkFileImports(file, [imp])).toEqual([]);
  });
});
