import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createFairByteBudget, type Release } from '../../../lib/byte-budget.js';
import { DomainError, rateLimited } from '../../../lib/errors.js';
import { createFairGate } from '../../../lib/fair-gate.js';
import { MAX_ATTACHMENT_BYTES } from '../../../modules/sending/attachments.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An answer that stays open (the event stream): not counted among requests in flight; it has caps of its own. */
    longLived?: boolean;
  }
}

/** What a workspace and the process may have under way on the HTTP API at once. */
export interface AdmissionLimits {
  /** Bytes of large request bodies being read or worked on, in all and per workspace. */
  bodyBytes: number;
  bodyBytesPerWorkspace: number;
  /** How long a large body may wait for its bytes before it is answered 503. */
  bodyWaitMs: number;
  /** Requests under way (authenticated, not yet answered), in all and per workspace. */
  inflight: number;
  inflightPerWorkspace: number;
}

/** A body above this (the body limit of most routes) counts against the byte budget. */
const SMALL_BODY_BYTES = 1024 * 1024;
/** Retry-After of a request refused for being one too many of its workspace's under way: they end fast. */
const INFLIGHT_RETRY_AFTER_S = 1;

/** Whose share a request takes: its workspace, or (a session without one) the session itself. */
function shareKey(request: FastifyRequest): string {
  const workspace = request.tenantContext?.workspaceId ?? request.serviceTokenContext?.workspaceId ?? request.sessionContext?.activeWorkspaceId;
  if (workspace) return workspace;
  return request.sessionContext ? `session:${request.sessionContext.sessionId}` : `address:${request.ip}`;
}

/** Runs `release` once the answer is over, sent or cut off. */
function onDone(reply: FastifyReply, release: Release): void {
  reply.raw.once('close', release);
  reply.raw.once('finish', release);
}

/** The declared body size: Content-Length, or null when the body is chunked (or declares nothing usable). */
function declaredLength(request: FastifyRequest): number | null {
  const header = request.headers['content-length'];
  return header !== undefined && /^\d{1,15}$/.test(header) ? Number(header) : null;
}

const busy = (waitMs: number) =>
  new DomainError(
    'unavailable',
    'server_busy',
    `large request bodies already use this server's memory budget, and none was freed within ${Math.round(waitMs / 1000)} s; retry later`,
    Math.max(1, Math.ceil(waitMs / 1000)),
  );

/**
 * The preParsing hook of every authenticated surface (after its credential hook, so the workspace is known and
 * no body byte is read yet): a cap on requests under way per workspace (429) and in all (503), and a byte budget
 * for large bodies shared fairly across workspaces, which a body waits for (503 with Retry-After past the wait).
 */
export function createAdmission(limits: AdmissionLimits) {
  const inflight = createFairGate({ total: limits.inflight, perKey: limits.inflightPerWorkspace });
  const bodies = createFairByteBudget({ totalBytes: limits.bodyBytes, perKeyBytes: limits.bodyBytesPerWorkspace });

  function admit(request: FastifyRequest, reply: FastifyReply, key: string): void {
    if (request.routeOptions.config.longLived === true) return;
    const release = inflight.tryAcquire(key);
    if (release) return onDone(reply, release);
    if (inflight.activeFor(key) >= Math.min(limits.inflightPerWorkspace, limits.inflight)) {
      throw rateLimited('too_many_in_flight', `this workspace already has ${inflight.activeFor(key)} requests under way, its most at once; retry when one has been answered`, INFLIGHT_RETRY_AFTER_S);
    }
    throw new DomainError('unavailable', 'server_busy', `this server already has ${inflight.active} requests under way, its most at once; retry later`, INFLIGHT_RETRY_AFTER_S);
  }

  /** A chunked body takes its bytes as they are read: reading pauses while the budget has none. */
  function counted<P extends NodeJS.ReadableStream>(payload: P, reply: FastifyReply, key: string): Transform {
    const releases: Release[] = [];
    onDone(reply, () => releases.splice(0).forEach((release) => release()));
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, done: TransformCallback) {
        bodies.acquire(key, chunk.length, limits.bodyWaitMs).then(
          (release) => (release ? (releases.push(release), done(null, chunk)) : done(busy(limits.bodyWaitMs))),
          (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
        );
      },
    });
    return payload.pipe(meter);
  }

  return async <P>(request: FastifyRequest, reply: FastifyReply, payload: P): Promise<P | Transform> => {
    const key = shareKey(request);
    admit(request, reply, key);
    const multipart = request.headers['content-type']?.toLowerCase().startsWith('multipart/') === true;
    if (request.routeOptions.bodyLimit <= SMALL_BODY_BYTES && !multipart) return payload;
    const declared = declaredLength(request);
    // A JSON body above the route's limit is refused (413) before it is read: it needs no budget.
    if (!multipart && declared !== null && declared > request.routeOptions.bodyLimit) return payload;
    // A form is read by the route itself, which holds no more than a draft's attachments (and a little more) of it.
    const upfront = multipart ? Math.min(declared ?? Number.POSITIVE_INFINITY, MAX_ATTACHMENT_BYTES + SMALL_BODY_BYTES) : declared;
    if (upfront === null) return counted(payload as NodeJS.ReadableStream, reply, key);
    const release = await bodies.acquire(key, upfront, limits.bodyWaitMs);
    if (!release) throw busy(limits.bodyWaitMs);
    onDone(reply, release);
    return payload;
  };
}
