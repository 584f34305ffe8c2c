// The schedules area's public module: what the layers above (activities, the composition root, the API: its routes'
// HTTP contract) may use of it. Its pure rules (rules.ts) and workflow contract (contract.ts) are imported where
// they stand: they are workflow-safe, and this module pulls in the store and the service.
export { schedulesHttp } from './http.js';
export { createScheduleService, type ScheduleService } from './service.js';
export { createScheduleStore, type ScheduleChargeRow, type ScheduleRow, type ScheduleStore } from './store.js';
