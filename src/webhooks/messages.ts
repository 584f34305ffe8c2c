// Sandbox messages (POST /sandbox/v1/messages): a message is stored and its outcome's events (300, then
// 301 / 302 / 304) go to the project's messaging webhook through the one delivery engine — so events
// other than the test card flow end to end before a real messaging provider exists.
import { newId } from '../platform/ids.js';
import { messageEvent, OUTCOME_EVENTS, type SandboxMessageRequest } from './rules.js';
import type { MessageRow } from './messages-store.js';
import type { Project } from '../projects/index.js';
import type { WebhookService } from './service.js';
import type { MessageStore } from './messages-store.js';

export interface SentMessage {
  readonly message: MessageRow;
  /** each event produced, with its delivery id (null when the webhook is not configured, disabled or not subscribed) */
  readonly events: readonly { readonly eventCode: number; readonly deliveryId: string | null }[];
}

export interface MessageService {
  sendSandbox(project: Project, request: SandboxMessageRequest): Promise<SentMessage>;
}

export function createMessageService(deps: {
  readonly stores: { readonly messages: MessageStore };
  readonly webhooks: Pick<WebhookService, 'deliverMessageEvent'>;
  readonly clock: () => Date;
}): MessageService {
  return {
    async sendSandbox(project, request) {
      const message = await deps.stores.messages.insert({
        receiptId: newId(),
        applicationId: project.application_id,
        refId: request.refId,
        templateCode: request.templateCode,
        phone: request.phone,
        outcome: request.outcome,
        createdAt: deps.clock(),
      });
      const events: { eventCode: number; deliveryId: string | null }[] = [];
      for (const code of OUTCOME_EVENTS[request.outcome]) {
        const event = messageEvent(code, { ...request, receiptId: message.receipt_id, createdAt: message.created_at });
        const row = await deps.webhooks.deliverMessageEvent(project.application_id, event);
        events.push({ eventCode: code, deliveryId: row?.delivery_id ?? null });
      }
      return { message, events };
    },
  };
}
