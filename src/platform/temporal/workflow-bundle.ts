// The workflow bundle: what it holds, and its build in a worker thread of its own. webpack, its loaders and the
// module graph take tens of MB of heap for a few seconds at start; in the worker's own isolate V8 keeps that heap
// grown for the life of the process, in a thread it is returned when the thread ends. The bundler's log lines
// cross to the caller's logger.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger as SdkLogger, LogLevel, LogMetadata } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';

/** The workflow bundle entry: every workflow paygate runs. */
export const WORKFLOWS_PATH = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/** The workflows' interceptors (every message and activity result passes them): part of every bundle. */
export const WORKFLOW_INTERCEPTORS_PATH = fileURLToPath(new URL('../../workflows/interceptors.ts', import.meta.url));

type WorkflowBundlerOptions = NonNullable<WorkerOptions['bundlerOptions']> & {
  readonly workflowInterceptorModules: string[];
};

/**
 * How webpack optimises the bundle. The SDK re-evaluates every module of the bundle for each workflow run and keeps
 * those instances with each cached run, so what a workflow does not use must not be in it: webpack's export
 * analysis drops a library a workflow reaches only through functions it never calls (zod, imported by the areas'
 * rules modules for their request parsing), as a production build would. Plain data: the bundler thread gets it too.
 */
const BUNDLE_OPTIMIZATION = { providedExports: true, usedExports: true, innerGraph: true, sideEffects: true } as const;

/** How the workflow bundle is built (the worker's, and the tests' prebuilt one). */
export const WORKFLOW_BUNDLER_OPTIONS: WorkflowBundlerOptions = {
  webpackConfigHook: (config) => ({ ...config, optimization: { ...config.optimization, ...BUNDLE_OPTIMIZATION } }),
  workflowInterceptorModules: [WORKFLOW_INTERCEPTORS_PATH],
};

type FromThread =
  | { readonly kind: 'log'; readonly level: LogLevel; readonly message: string; readonly meta?: LogMetadata }
  | { readonly kind: 'done'; readonly code: string }
  | { readonly kind: 'failed'; readonly message: string; readonly stack?: string };

// Plain JavaScript: a worker thread does not inherit the TypeScript loader of `node --import tsx`. The SDK is
// required by the absolute path resolved here, so the thread finds it whatever the working directory.
const THREAD_SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
const post = (msg) => parentPort.postMessage(msg);
const plainMeta = (meta) => {
  try { return meta === undefined ? undefined : JSON.parse(JSON.stringify(meta)); } catch { return undefined; }
};
(async () => {
  try {
    const { bundleWorkflowCode, DefaultLogger } = require(workerData.sdk);
    const logger = new DefaultLogger('TRACE', (e) => post({ kind: 'log', level: e.level, message: e.message, meta: plainMeta(e.meta) }));
    const { code } = await bundleWorkflowCode({
      workflowsPath: workerData.workflowsPath,
      workflowInterceptorModules: workerData.interceptorModules,
      logger,
      webpackConfigHook: (config) => ({ ...config, optimization: { ...config.optimization, ...workerData.optimization } }),
    });
    post({ kind: 'done', code });
  } catch (err) {
    post({ kind: 'failed', message: String((err && err.message) || err), stack: err && err.stack });
  }
})();
`;

/** Bundles `workflowsPath` (with WORKFLOW_BUNDLER_OPTIONS) in a worker thread; resolves with the bundle's code. */
export function bundleWorkflowsInThread(workflowsPath: string, logger: SdkLogger): Promise<{ code: string }> {
  const sdk = createRequire(import.meta.url).resolve('@temporalio/worker');
  return new Promise((resolve, reject) => {
    const thread = new Worker(THREAD_SCRIPT, {
      eval: true,
      workerData: {
        sdk,
        workflowsPath,
        interceptorModules: WORKFLOW_BUNDLER_OPTIONS.workflowInterceptorModules,
        optimization: BUNDLE_OPTIMIZATION,
      },
    });
    let settled = false;
    thread.on('message', (msg: FromThread) => {
      if (msg.kind === 'log') logger.log(msg.level, msg.message, msg.meta);
      else if (msg.kind === 'done') {
        settled = true;
        resolve({ code: msg.code });
      } else {
        settled = true;
        reject(Object.assign(new Error(msg.message), msg.stack ? { stack: msg.stack } : {}));
      }
    });
    thread.once('error', (err) => {
      settled = true;
      reject(err);
    });
    thread.once('exit', (code) => {
      if (!settled) reject(new Error(`the workflow bundler thread exited with code ${code} before it answered`));
    });
  });
}
