import fastifyStatic from '@fastify/static';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The product app's Content-Security-Policy. Scripts come only from this origin (no inline script, no eval).
 * Messages render in a sandboxed srcdoc iframe, which inherits this policy on top of its own meta policy, so
 * what a message may need is allowed here and narrowed there: inline `<style>`, and images from anywhere
 * (the iframe's own policy allows only `data:` until the reader asks for remote images, decision 244).
 */
export const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The PDF preview page's policy (decision 763): it runs sandboxed in an opaque origin and gets the file by
 * postMessage, so it may load this origin's scripts and style and nothing else; it fetches nothing.
 */
export const PDF_PREVIEW_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src data: blob:",
  "connect-src 'none'",
  "worker-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join('; ');

/** Hashed file names change with their content, so a year and `immutable` are safe (RFC 8246). */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/**
 * Paths the API owns: an unknown path under one of them stays a JSON 404, never the app's index.html,
 * so a client of the API-key surface at the root never gets HTML for a typo. `/metrics` is served only on the metrics
 * listener: here it is a 404, for a browser too.
 */
const API_PREFIXES = ['/app/api', '/v1', '/inbox', '/messages', '/mailboxes', '/threads', '/stats', '/send', '/health', '/openapi.json', '/assets', '/metrics'];

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mailroom</title></head>
<body><h1>Mailroom</h1>
<p>The web app is not built in this checkout. Run <code>npm ci</code> (or <code>npm run build</code>) and start the service again.</p>
<p>The API answers as usual: see <a href="/openapi.json">/openapi.json</a>.</p></body></html>
`;

function isApiPath(path: string): boolean {
  return API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** A GET (or HEAD) a browser makes for a page: it accepts HTML and names no API path. */
function wantsPage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const accept = request.headers.accept ?? '';
  return accept.includes('text/html') && !isApiPath(request.url.split('?')[0] ?? '/');
}

function sendPage(reply: FastifyReply, html: string, csp = WEB_CSP): FastifyReply {
  return reply
    .code(200)
    .header('cache-control', 'no-cache')
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(html);
}

/** Answers a page request that matched no route with the app's index.html; null when it is no page request. */
export type PageFallback = (request: FastifyRequest, reply: FastifyReply) => FastifyReply | null;

/**
 * Serve the built app from `root` (the Vite output: index.html and assets/): `/` and every page path the API
 * does not own answer index.html (the app's routes), `/assets/*` the hashed files. Without a build, `/` says
 * how to make one. Returns the fallback the not-found handler calls.
 */
export async function registerWebApp(app: FastifyInstance, root: string | null): Promise<PageFallback> {
  const indexFile = root === null ? null : join(root, 'index.html');
  // Read once: the file changes only with a new build, which comes with a restart.
  const index = indexFile !== null && existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : NOT_BUILT;
  if (root !== null && index !== NOT_BUILT && existsSync(join(root, 'assets'))) {
    await app.register(fastifyStatic, {
      root: join(root, 'assets'),
      prefix: '/assets/',
      index: false,
      // Cache-Control is set below for every asset; the plugin's own would say less.
      cacheControl: false,
      etag: true,
      lastModified: false,
      setHeaders: (res) => {
        res.setHeader('cache-control', ASSET_CACHE_CONTROL);
        // The PDF preview page has an opaque origin (decision 763): its module scripts are CORS requests from
        // `null`. The assets are public, hashed, and sent without credentials, so any origin may read them.
        res.setHeader('access-control-allow-origin', '*');
        res.setHeader('x-content-type-options', 'nosniff');
      },
    });
  }
  app.get('/', { schema: { hide: true } }, async (_request, reply) => sendPage(reply, index));
  const previewFile = root === null ? null : join(root, 'pdf-preview.html');
  if (previewFile !== null && existsSync(previewFile)) {
    const preview = readFileSync(previewFile, 'utf8');
    app.get('/pdf-preview.html', { schema: { hide: true } }, async (_request, reply) => sendPage(reply, preview, PDF_PREVIEW_CSP));
  }
  return (request, reply) => (wantsPage(request) ? sendPage(reply, index) : null);
}
