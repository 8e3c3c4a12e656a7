import DOMPurify from 'dompurify';

// Message HTML is hostile input. It is cleaned with DOMPurify and then shown in an iframe with `sandbox` (no
// allow-scripts, no allow-same-origin: an opaque origin that can reach neither this page nor its storage) and a
// policy of its own that allows no fetch at all until the reader asks for images (decision 244).

/** Elements that fetch, navigate, submit or embed; removed even where DOMPurify would keep them. */
const FORBID_TAGS = ['form', 'input', 'button', 'select', 'textarea', 'option', 'meta', 'base', 'link', 'iframe', 'frame', 'frameset', 'object', 'embed', 'audio', 'video', 'source', 'track', 'picture', 'svg', 'math', 'script', 'noscript', 'template', 'portal'];
const FORBID_ATTR = ['srcset', 'action', 'formaction', 'ping', 'background', 'poster', 'lowsrc', 'dynsrc'];

let hooked = false;
/** The inline images of the message being cleaned (its Content-IDs to data: URLs); set only during one sanitize. */
let inlineImages: ReadonlyMap<string, string> | null = null;

function hookLinks(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
    const src = node.tagName === 'IMG' ? node.getAttribute('src') : null;
    if (src !== null && inlineImages !== null && /^cid:/i.test(src)) {
      const url = inlineImages.get(cidOf(src));
      if (url !== undefined) node.setAttribute('src', url);
    }
  });
}

/** The Content-ID a `cid:` URL names (RFC 2392: URL-encoded, without the angle brackets). */
export function cidOf(url: string): string {
  const raw = url.slice(4);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * The message's HTML without anything that runs, navigates the frame or submits; `cid:` images found in `inline`
 * become its data: URLs (the frame's policy allows no other image until the reader asks).
 */
export function sanitizeHtml(html: string, inline: ReadonlyMap<string, string> | null = null): string {
  hookLinks();
  inlineImages = inline;
  try {
    return sanitizeWith(html);
  } finally {
    inlineImages = null;
  }
}

function sanitizeWith(html: string): string {
  return DOMPurify.sanitize(html, {
    FORBID_TAGS,
    FORBID_ATTR,
    WHOLE_DOCUMENT: false,
    // Keeps a leading <style> in the body instead of dropping it.
    FORCE_BODY: true,
    ALLOW_DATA_ATTR: false,
  });
}

/**
 * The iframe's srcdoc: the meta policy comes first so it governs everything after it. Without `showImages`,
 * images (and CSS url()s) may only be data: URLs; with it, http(s) images too. Nothing else is fetched, ever.
 */
export function messageDocument(html: string, showImages: boolean, inline: ReadonlyMap<string, string> | null = null): string {
  const img = showImages ? 'data: https: http:' : 'data:';
  const csp = `default-src 'none'; img-src ${img}; style-src 'unsafe-inline'; font-src data:; form-action 'none'; base-uri 'none'; script-src 'none'`;
  return `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"><meta charset="utf-8"><meta name="referrer" content="no-referrer"><style>body{margin:0;padding:8px;font:14px/1.5 system-ui,sans-serif;color:#111;background:#fff;overflow-wrap:anywhere}img{max-width:100%;height:auto}</style></head><body>${sanitizeHtml(html, inline)}</body></html>`;
}

/** Plain text as a document for the same frame (escaped, kept in its lines). */
export function textDocument(text: string): string {
  const escaped = text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  return messageDocument(`<pre style="white-space:pre-wrap;font:inherit">${escaped}</pre>`, false);
}

/** Whether the message asks for anything remote (so "show images" is worth offering). */
export function hasRemoteContent(html: string): boolean {
  return /(?:src\s*=|url\()\s*["']?https?:/i.test(html);
}
