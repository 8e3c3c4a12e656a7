/**
 * The audit log's action names: `<what>.<change>`. A reader filters by one (`member.added`) or by its family
 * (`webhook.` or `webhook`). The names are part of the API (docs/api.md, docs/operations.md): add, never rename.
 */
export const AUDIT_ACTIONS = {
  workspaceCreated: 'workspace.created',
  workspaceSuspended: 'workspace.suspended',
  workspaceResumed: 'workspace.resumed',
  workspaceDeleted: 'workspace.deleted',
  /** An operator set a quota or a retention setting of the workspace (the quota and retention parts record them). */
  quotaSet: 'quota.set',
  retentionSet: 'retention.set',

  memberAdded: 'member.added',
  memberRoleChanged: 'member.role_changed',
  memberRemoved: 'member.removed',

  apiKeyCreated: 'api_key.created',
  apiKeyRevoked: 'api_key.revoked',
  /** A session ended by its user (log out). */
  sessionRevoked: 'session.revoked',
  /** A member changed their password; their other sessions ended with it (`details.sessions_ended`). */
  passwordChanged: 'user.password_changed',
  /** An app password (a mail client's credential for one mailbox) made or revoked; never the password. */
  appPasswordCreated: 'app_password.created',
  appPasswordRevoked: 'app_password.revoked',
  serviceTokenCreated: 'service_token.created',
  serviceTokenRotated: 'service_token.rotated',
  serviceTokenRevoked: 'service_token.revoked',

  domainCreated: 'domain.created',
  domainVerified: 'domain.verified',
  domainRecordsRotated: 'domain.records_rotated',
  /** Its return-path host set, changed or cleared (before and after in `details`). */
  domainUpdated: 'domain.updated',
  domainDeleted: 'domain.deleted',

  webhookCreated: 'webhook.created',
  /** Its URL or event types changed (before and after in `details`). */
  webhookUpdated: 'webhook.updated',
  webhookSecretRotated: 'webhook.secret_rotated',
  webhookDisabled: 'webhook.disabled',
  webhookEnabled: 'webhook.enabled',
  webhookDeleted: 'webhook.deleted',
  webhookReplayed: 'webhook.replayed',
  webhookRecovered: 'webhook.recovered',

  listEntryAdded: 'list.entry_added',
  listEntryRemoved: 'list.entry_removed',
  suppressionAdded: 'suppression.added',
  suppressionRemoved: 'suppression.removed',
} as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[keyof typeof AUDIT_ACTIONS];

/** Every action name, for validation and documentation. */
export const AUDIT_ACTION_NAMES: readonly AuditAction[] = Object.values(AUDIT_ACTIONS);
