// Unit checks of what the conformance suite does not drive through the SDK: the BuildIds values of versioned and
// pinned workers (worker versioning and deployments are not implemented, so such workers are not routed as on
// Temporal), the size bound of the attribute, and the command line's continue-as-new limits.
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../src/args.js';
import { enums } from '../src/proto.js';
import type { WorkerVersionInfo } from '../src/state.js';
import { buildIdsAfterCompletion } from '../src/workflow-task-completion.js';

const B = enums.VersioningBehavior;

function version(partial: Partial<WorkerVersionInfo>): WorkerVersionInfo {
  return { stamp: null, deploymentName: '', deploymentVersion: null, behavior: B.VERSIONING_BEHAVIOR_UNSPECIFIED, ...partial };
}

describe('BuildIds search attribute', () => {
  it('starts with the unversioned sentinel and adds each new build id once, oldest first', () => {
    let ids = buildIdsAfterCompletion([], version({ stamp: { buildId: 'a', useVersioning: false } }));
    expect(ids).toEqual(['unversioned', 'unversioned:a']);
    ids = buildIdsAfterCompletion(ids, version({ stamp: { buildId: 'b', useVersioning: false } }));
    ids = buildIdsAfterCompletion(ids, version({ stamp: { buildId: 'a', useVersioning: false } }));
    expect(ids).toEqual(['unversioned', 'unversioned:a', 'unversioned:b']);
  });

  it('marks build-id versioning as versioned:<id> without the sentinel', () => {
    expect(buildIdsAfterCompletion([], version({ stamp: { buildId: 'v1', useVersioning: true } }))).toEqual(['versioned:v1']);
  });

  it('records only the sentinel for a completion without a version stamp', () => {
    expect(buildIdsAfterCompletion([], version({}))).toEqual(['unversioned']);
  });

  it('puts pinned:<deployment>:<build id> first for a pinned workflow, replacing an earlier pin', () => {
    const pinned = (buildId: string) =>
      version({
        stamp: { buildId, useVersioning: false },
        deploymentName: 'dep',
        deploymentVersion: { deploymentName: 'dep', buildId },
        behavior: B.VERSIONING_BEHAVIOR_PINNED,
      });
    let ids = buildIdsAfterCompletion([], pinned('1'));
    expect(ids).toEqual(['pinned:dep:1', 'unversioned:1']);
    ids = buildIdsAfterCompletion(ids, pinned('2'));
    expect(ids).toEqual(['pinned:dep:2', 'unversioned:1', 'unversioned:2']);
  });

  it('drops the oldest build ids (never the sentinel) past 2 KiB', () => {
    let ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      ids = buildIdsAfterCompletion(ids, version({ stamp: { buildId: `build-${i}-${'x'.repeat(20)}`, useVersioning: false } }));
    }
    expect(Buffer.byteLength(JSON.stringify(ids))).toBeLessThanOrEqual(2048);
    expect(ids[0]).toBe('unversioned');
    expect(ids[ids.length - 1]).toBe(`unversioned:build-99-${'x'.repeat(20)}`);
    expect(ids).not.toContain(`unversioned:build-0-${'x'.repeat(20)}`);
  });
});

describe('continue-as-new limits on the command line', () => {
  it('reads limit.historyCount / limit.historySize .suggestContinueAsNew and ignores other keys', () => {
    const opts = parseArgs([
      'server',
      'start-dev',
      '--dynamic-config-value',
      'limit.historyCount.suggestContinueAsNew=100',
      '--dynamic-config-value=limit.historySize.suggestContinueAsNew=2048',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
    ]);
    expect(opts.dynamicConfig).toEqual({ historyCountSuggestContinueAsNew: 100, historySizeSuggestContinueAsNew: 2048 });
  });

  it('refuses a limit that is not a number', () => {
    expect(() =>
      parseArgs(['server', 'start-dev', '--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew="many"']),
    ).toThrow(/expected a non-negative number/);
  });
});
