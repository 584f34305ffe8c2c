// The layering rules of ARCHITECTURE.md, checked on the import statements of every source file.
// `npm run lint` prints the violations; test/architecture/imports.test.ts fails on any.
// Static imports only: a dynamic import() is how an entry point loads something on demand (the
// in-process sandbox PGs), and is checked where it stands.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface Import {
  /** the specifier as written */
  readonly specifier: string;
  /** repository-relative path of a local import ('src/platform/errors.ts'), or the package name */
  readonly target: string;
  readonly local: boolean;
  /** `import type` / `export type`: erased at run time */
  readonly typeOnly: boolean;
}

export interface Violation {
  readonly file: string;
  readonly target: string;
  readonly rule: string;
}

const STATIC_IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** The static imports of one file (repository-relative path). */
export function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found: Import[] = [];
  for (const match of text.matchAll(STATIC_IMPORT)) {
    const specifier = match[3]!;
    const typeOnly = match[2] !== undefined;
    if (specifier.startsWith('.')) {
      const target = relative(ROOT, resolve(ROOT, dirname(file), specifier)).replace(/\.js$/, '.ts');
      found.push({ specifier, target, local: true, typeOnly });
    } else {
      found.push({ specifier, target: packageName(specifier), local: false, typeOnly });
    }
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const inFolder = (path: string, folder: string) => path.startsWith(`src/${folder}/`) || path === `src/${folder}.ts`;

/** The areas: each one folder (service, store, rules, contract, adapters) beside its one file in api/routes, workflows and activities. */
export const AREAS = [
  'payments',
  'verification',
  'escrow',
  'reserves',
  'schedules',
  'webhooks',
  'projects',
  'gateways',
  'upstream',
] as const;
const areaOf = (path: string) => AREAS.find((a) => inFolder(path, a));
const inArea = (path: string) => areaOf(path) !== undefined;
/** An area's public module (`src/<area>/index.ts`): what the others use of it, its rules and contracts aside. */
export const isPublicModule = (path: string) => AREAS.some((a) => path === `src/${a}/index.ts`);

/**
 * The folders of src/ by layer, lowest first (ARCHITECTURE.md, "Layers"): a file imports from its own folder and from
 * lower layers only, never from a folder beside it or above it, type-only imports included. The areas among them are
 * ordered by what they use: payments relays through upstream, which signs with webhooks and calls through gateways.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['platform'],
  ['projects'],
  ['webhooks', 'gateways'],
  ['upstream'],
  ['payments'],
  ['verification', 'escrow', 'reserves', 'schedules'],
  ['sandbox', 'activities'],
  ['workflows', 'composition', 'dashboard'],
  ['api', 'cli'],
  ['main'],
];
/** The top folder of a file of src/ ('main' for src/main.ts); undefined outside src/. */
const folderOf = (path: string): string | undefined =>
  path.startsWith('src/') ? path.slice('src/'.length).split('/')[0]!.replace(/\.ts$/, '') : undefined;
const layerOf = (folder: string | undefined): number =>
  folder === undefined ? -1 : LAYERS.findIndex((layer) => layer.includes(folder));

/**
 * Pure modules beyond the naming convention (an area's `rules.ts` / `*-rules.ts`): rules without I/O that any layer,
 * the workflows included, may import. ARCHITECTURE.md ("Pure rules") names each of them.
 */
export const PURE_FILES = new Set([
  'src/platform/errors.ts',
  'src/platform/ids.ts',
  'src/platform/time.ts',
  'src/platform/validation.ts',
  'src/platform/ip.ts',
  'src/platform/temporal/messages.ts',
  'src/escrow/status.ts',
  'src/projects/access.ts',
  'src/projects/key-rotation.ts',
  'src/projects/scopes.ts',
  'src/webhooks/retry-ladder.ts',
]);
export const isPure = (path: string) => PURE_FILES.has(path) || (inArea(path) && /\/([a-z-]+-)?rules\.ts$/.test(path));

/** Contracts: what crosses the workflow boundary (ids, messages, inputs, results); workflow-safe. */
export const isContract = (path: string) =>
  (inArea(path) && /\/([a-z-]+-)?contract\.ts$/.test(path)) || path === 'src/gateways/declined.ts';

/** Modules that do I/O or belong to a framework: never imported by pure rules. */
const IO_MODULES = [
  'fastify',
  'undici',
  'pg',
  'kysely',
  'pino',
  '@electric-sql/pglite',
  '@grpc/grpc-js',
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:https',
  'node:child_process',
  'node:dns',
];

/** Pure functions of an I/O module that pure code may use, by file: node:net's isIP is the canonical address parser. */
const PURE_USES: Readonly<Record<string, readonly string[]>> = { 'src/platform/ip.ts': ['node:net'] };

interface Rule {
  readonly name: string;
  readonly applies: (file: string) => boolean;
  readonly forbids: (imp: Import, file: string) => boolean;
}

const RULES: readonly Rule[] = [
  {
    name: 'a folder of src/ imports only its own files and lower layers (LAYERS), type-only imports included',
    applies: (f) => layerOf(folderOf(f)) >= 0,
    forbids: (imp, file) => {
      if (!imp.local || !imp.target.startsWith('src/')) return false;
      const [from, to] = [folderOf(file), folderOf(imp.target)];
      return from !== to && layerOf(to) >= layerOf(from);
    },
  },
  {
    name: 'rules are pure: they import only other rules, no I/O, no framework',
    applies: isPure,
    forbids: (imp, file) =>
      imp.local
        ? !isPure(imp.target)
        : (IO_MODULES.includes(imp.specifier) && !PURE_USES[file]?.includes(imp.specifier)) ||
          imp.target.startsWith('@temporalio/'),
  },
  {
    name: 'contracts import only rules, other contracts and @temporalio/workflow',
    applies: isContract,
    forbids: (imp) => (imp.local ? !(isPure(imp.target) || isContract(imp.target)) : imp.target !== '@temporalio/workflow'),
  },
  {
    name: 'workflows import @temporalio/workflow, contracts, rules, and activity types only',
    applies: (f) => inFolder(f, 'workflows'),
    forbids: (imp) =>
      imp.local
        ? !(
            inFolder(imp.target, 'workflows') ||
            isContract(imp.target) ||
            isPure(imp.target) ||
            (inFolder(imp.target, 'activities') && imp.typeOnly)
          )
        : imp.target !== '@temporalio/workflow',
  },
  {
    // Rules and contracts stay importable where they stand: they are workflow-safe, and the workflows, the sandbox
    // and other rules import them, while an index.ts pulls in the area's stores and services (I/O).
    name: 'an area is imported from outside only through its public module (index.ts), its rules and its contracts',
    applies: (f) => f.startsWith('src/'),
    forbids: (imp, file) => {
      const area = imp.local ? areaOf(imp.target) : undefined;
      return (
        area !== undefined &&
        area !== areaOf(file) &&
        !isPublicModule(imp.target) &&
        !isPure(imp.target) &&
        !isContract(imp.target)
      );
    },
  },
  {
    name: 'platform imports no area and nothing above it',
    applies: (f) => inFolder(f, 'platform'),
    forbids: (imp) => imp.local && imp.target.startsWith('src/') && !inFolder(imp.target, 'platform'),
  },
  {
    name: 'observability (metrics, log context) imports no framework and Temporal types only',
    applies: (f) => inFolder(f, 'platform/observability'),
    forbids: (imp) => !imp.local && (imp.target === 'fastify' || (imp.target.startsWith('@temporalio/') && !imp.typeOnly)),
  },
  {
    // a service starts its workflow by the signature in its contract: workflow code imports activity types, and
    // activities import the areas, so an area importing workflow code, even as types, closes an import circle
    name: 'an area is Fastify-free and imports no route, activity, workflow, dashboard, CLI, composition or sandbox code',
    applies: inArea,
    forbids: (imp) =>
      imp.local
        ? ['api', 'activities', 'workflows', 'dashboard', 'cli', 'composition', 'sandbox', 'main'].some((l) =>
            inFolder(imp.target, l),
          )
        : imp.target === 'fastify',
  },
  {
    name: 'activities are Fastify-free and reach the outside through the areas (the composition root builds them)',
    applies: (f) => inFolder(f, 'activities'),
    forbids: (imp) =>
      imp.local
        ? ['api', 'workflows', 'dashboard', 'cli', 'sandbox', 'main', 'composition'].some((l) => inFolder(imp.target, l))
        : imp.target === 'fastify',
  },
  {
    name: 'the composition root imports no HTTP code (the worker process builds through it)',
    applies: (f) => inFolder(f, 'composition'),
    forbids: (imp) =>
      imp.local ? ['api', 'dashboard', 'cli', 'main'].some((l) => inFolder(imp.target, l)) : imp.target === 'fastify',
  },
  {
    name: "the dashboard reaches data through services: no API, activity, workflow, gateway or Temporal code; an area's public module as types only",
    applies: (f) => inFolder(f, 'dashboard'),
    forbids: (imp) =>
      imp.local
        ? inFolder(imp.target, 'api') ||
          ['activities', 'workflows', 'gateways', 'sandbox', 'platform/temporal', 'composition'].some((l) =>
            inFolder(imp.target, l),
          ) ||
          (isPublicModule(imp.target) && !imp.typeOnly)
        : false,
  },
  {
    name: 'a route module imports no other route module',
    applies: (f) => f.startsWith('src/api/routes/'),
    forbids: (imp) => imp.local && imp.target.startsWith('src/api/routes/'),
  },
  {
    name: 'the sandbox PGs are another system: only tests and the sandbox itself import them statically',
    applies: (f) => f.startsWith('src/') && !inFolder(f, 'sandbox'),
    forbids: (imp) => imp.local && inFolder(imp.target, 'sandbox'),
  },
  {
    name: 'the sandbox PGs share only the platform and pure rules with paygate',
    applies: (f) => inFolder(f, 'sandbox'),
    forbids: (imp) =>
      imp.local &&
      imp.target.startsWith('src/') &&
      !['sandbox', 'platform'].some((l) => inFolder(imp.target, l)) &&
      !isPure(imp.target),
  },
  {
    name: 'the chaos suite drives processes over HTTP: of src/ only rules and the PG key derivation (payments/charges.ts)',
    applies: (f) => f.startsWith('chaos/'),
    forbids: (imp) =>
      imp.local && imp.target.startsWith('src/') && !isPure(imp.target) && imp.target !== 'src/payments/charges.ts',
  },
  {
    name: "the tour is a merchant's client of a running server: it imports nothing of src/ (README's steps use HTTP only)",
    applies: (f) => f.startsWith('tools/tour/'),
    forbids: (imp) => imp.local && imp.target.startsWith('src/'),
  },
  {
    name: 'the engine is independent of the application',
    applies: (f) => f.startsWith('engine/'),
    forbids: (imp) => imp.local && imp.target.startsWith('src/'),
  },
];

/** Every file reachable from `entry` through static runtime imports (type-only imports are erased). */
export function runtimeClosure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const imp of importsOf(file)) {
      if (imp.typeOnly) continue;
      if (imp.local) pending.push(imp.target);
      else packages.add(imp.target);
    }
  }
  return { files, packages };
}

/** The rules `file` breaks with `imports`. */
export function checkFileImports(file: string, imports: readonly Import[]): Violation[] {
  const violations: Violation[] = [];
  for (const rule of RULES.filter((r) => r.applies(file))) {
    for (const imp of imports) if (rule.forbids(imp, file)) violations.push({ file, target: imp.target, rule: rule.name });
  }
  return violations;
}

/** Import circles among `files` (type-only imports count: they tie the modules' meaning together), each as a path. */
export function importCircles(
  files: readonly string[],
  localImports: (file: string) => readonly string[] = (f) => importsOf(f).flatMap((i) => (i.local ? [i.target] : [])),
): string[][] {
  const graph = new Map(files.map((f) => [f, localImports(f).filter((t) => files.includes(t))]));
  const circles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') circles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return circles;
}

export function checkImports(): Violation[] {
  const files = [
    ...sourceFiles('src'),
    ...sourceFiles('engine/src'),
    ...sourceFiles('chaos'),
    ...sourceFiles('tools/tour'),
    'worker.ts',
  ];
  const violations = files.flatMap((file) => checkFileImports(file, importsOf(file)));
  for (const dir of ['src', 'engine/src']) {
    for (const circle of importCircles(sourceFiles(dir)))
      violations.push({
        file: circle[0]!,
        target: circle.join(' -> '),
        rule: `no import circle in ${dir} (type-only imports count)`,
      });
  }
  for (const folder of sourceFiles('src').map(folderOf)) {
    if (layerOf(folder) < 0)
      violations.push({ file: `src/${folder}`, target: '', rule: 'every folder of src/ has its layer (LAYERS)' });
  }
  const worker = runtimeClosure('worker.ts');
  for (const file of worker.files) {
    if (inFolder(file, 'api'))
      violations.push({ file: 'worker.ts', target: file, rule: 'the worker process does not load the HTTP API' });
  }
  if (worker.packages.has('fastify'))
    violations.push({ file: 'worker.ts', target: 'fastify', rule: 'the worker process does not import Fastify' });
  return violations;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const violations = checkImports();
  for (const v of violations) process.stderr.write(`${v.file} -> ${v.target}: ${v.rule}\n`);
  process.stdout.write(`import rules: ${violations.length === 0 ? 'ok' : `${violations.length} violation(s)`}\n`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
