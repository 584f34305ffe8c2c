// What a run's named deadline does when it comes due (the deadlines are armed on the clock by core.ts):
// timer:<id> fires a timer, wft / wftretry / backoff concern workflow tasks, act:<scheduledId>:<kind> an
// activity's timeouts and retry, run / execution the workflow's timeouts.
import { activityTimedOut, retryActivity } from './activity-tasks.js';
import type { EngineCore } from './core.js';
import { timeOutWorkflow } from './lifecycle.js';
import { log } from './log.js';
import { EventType, TimeoutType } from './proto.js';
import type { Execution } from './state.js';
import { addExternal, scheduleWorkflowTask, workflowTaskTimedOut } from './workflow-tasks.js';

export function onDeadline(core: EngineCore, ex: Execution, name: string): void {
  if (!core.isOpen(ex)) return;
  const [kind, id, sub] = name.split(':');
  switch (kind) {
    case 'timer': {
      const t = ex.s.timers[id!];
      if (!t) return;
      delete ex.s.timers[id!];
      addExternal(core, ex, [
        core.event(EventType.EVENT_TYPE_TIMER_FIRED, 'timerFiredEventAttributes', {
          timerId: id,
          startedEventId: t.startedEventId,
        }),
      ]);
      break;
    }
    case 'wft':
      if (ex.s.wft.phase === 'started') workflowTaskTimedOut(core, ex, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
      break;
    case 'wftretry':
      scheduleWorkflowTask(core, ex);
      break;
    case 'act': {
      const a = ex.s.activities[id!];
      if (!a) return;
      if (sub === 'retry') retryActivity(core, ex, a);
      else activityTimedOut(core, ex, a, sub!);
      break;
    }
    case 'run':
    case 'execution':
      timeOutWorkflow(core, ex, kind === 'run');
      break;
    case 'backoff':
      scheduleWorkflowTask(core, ex);
      break;
    default:
      log.warn('unknown deadline', { name });
  }
  core.markDirty(ex);
}
