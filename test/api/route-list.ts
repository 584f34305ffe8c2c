// Every route the app registered, read from the router itself (`printRoutes`), so tests that walk all
// routes (fuzzing, Idempotency-Key coverage) also cover a route added later without being edited.
import type { FastifyInstance } from 'fastify';

export interface Endpoint {
  readonly method: string;
  /** the router's path, e.g. /v2/receipt/:receipt_id */
  readonly path: string;
}

/** Parses `printRoutes({ commonPrefix: false })`: one tree line per node, children indented by 4. */
export function routesOf(tree: string): Endpoint[] {
  const endpoints: Endpoint[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.indexOf('── ');
    if (at < 0) continue;
    const depth = Math.floor(at / 4);
    const match = /^(\S+)(?: \(([^)]*)\))?/.exec(line.slice(at + 3));
    if (!match) continue;
    const path = (depth > 0 ? (prefixes[depth - 1] ?? '') : '') + match[1]!;
    prefixes[depth] = path;
    prefixes.length = depth + 1;
    for (const method of (match[2] ?? '').split(',').map((m) => m.trim())) {
      if (method && method !== 'HEAD' && method !== 'OPTIONS') endpoints.push({ method, path });
    }
  }
  return endpoints;
}

export function endpointsOf(app: FastifyInstance): Endpoint[] {
  return routesOf(app.printRoutes({ commonPrefix: false }));
}

/** The path with every parameter (or alternative parameters, `:a|:b`) replaced by `param`. */
export function concretePath(path: string, param: string): string {
  return path.replace(/:[A-Za-z_]+(\|:[A-Za-z_]+)*/g, param);
}
