import type { Work } from '../../db/tables.js';
import { invalid, notFound } from '../../lib/errors.js';
import type { MailStore } from '../mail/mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { MAX_BULK_MESSAGES, type BulkService } from './bulk.service.js';
import { LABEL_PATTERN } from './message.types.js';

/** What `GET /labels` answers of one label. */
export interface LabelView {
  name: string;
  /** `#rrggbb`; null: never given one (the app's default colour). */
  colour: string | null;
  /** Whether the workspace defined it (a colour); false: only carried by messages. */
  defined: boolean;
  /** Messages carrying it, counted up to `count_cap`. */
  messages: number;
  /** Unread ones outside trash and spam (of the newest unread messages: see `unread_capped`). */
  unread: number;
}

export interface LabelList {
  labels: LabelView[];
  count_cap: number;
  unread_capped: boolean;
}

export interface LabelService {
  list(tenant: TenantContext): Promise<LabelList>;
  /** Define a label (or change its colour): any member may, as any member may label messages. */
  setColour(tenant: TenantContext, name: string, colour: string): Promise<{ name: string; colour: string }>;
  /**
   * Forget the label and take it off up to MAX_BULK_MESSAGES messages; `remaining` says more carry it (call again).
   * 404 when the workspace neither defined it nor has it on a message.
   */
  remove(tenant: TenantContext, name: string): Promise<{ name: string; removed: number; remaining: boolean }>;
}

export interface LabelServiceDeps {
  work: Work;
  store: Pick<MailStore, 'labelSummary' | 'saveLabelColour' | 'labelDefinitionCount' | 'deleteLabelDefinition' | 'messagesWithLabel'>;
  bulk: Pick<BulkService, 'apply'>;
}

const COLOUR = /^#[0-9a-f]{6}$/;
/** Labels a workspace may define (as many as `GET /labels` lists). */
const MAX_LABELS_DEFINED = 200;

function checkName(name: string): void {
  if (!LABEL_PATTERN.test(name)) throw invalid('invalid_label', `label '${name}' must be 1–64 characters of a-z 0-9 _ . : -`);
}

export function createLabelService({ work, store, bulk }: LabelServiceDeps): LabelService {
  return {
    async list(tenant) {
      const summary = await store.labelSummary(work, tenant.workspaceId);
      return { labels: summary.labels, count_cap: summary.countCap, unread_capped: summary.unreadCapped };
    },

    async setColour(tenant, name, colour) {
      checkName(name);
      const value = colour.toLowerCase();
      if (!COLOUR.test(value)) throw invalid('invalid_colour', 'colour must be #rrggbb');
      await work.transaction().execute(async (trx) => {
        await store.saveLabelColour(trx, tenant.workspaceId, name, value);
        if ((await store.labelDefinitionCount(trx, tenant.workspaceId)) > MAX_LABELS_DEFINED) {
          throw invalid('too_many_labels', `a workspace defines at most ${MAX_LABELS_DEFINED} labels`);
        }
      });
      return { name, colour: value };
    },

    async remove(tenant, name) {
      checkName(name);
      const defined = await store.deleteLabelDefinition(work, tenant.workspaceId, name);
      const ids = await store.messagesWithLabel(work, tenant.workspaceId, name, MAX_BULK_MESSAGES + 1);
      if (!defined && ids.length === 0) throw notFound('label_not_found', `no label ${name}`);
      const batch = ids.slice(0, MAX_BULK_MESSAGES);
      const answer = batch.length === 0 ? { results: [] } : await bulk.apply(tenant, { action: 'label', message_ids: batch, remove: [name] });
      return { name, removed: answer.results.filter((r) => r.ok).length, remaining: ids.length > MAX_BULK_MESSAGES };
    },
  };
}
