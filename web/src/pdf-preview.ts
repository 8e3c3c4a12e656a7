// The PDF preview page (decision 763). It runs in a frame sandboxed with allow-scripts and without allow-same-origin:
// an opaque origin that can read neither the app nor its storage, under a policy that lets it load nothing but this
// origin's scripts and fetch nothing at all. The PDF's bytes arrive by postMessage from the app; pdf.js parses them
// here, on this page's thread (its worker module is bundled in and set as `pdfjsWorker`, since a Worker cannot be
// started from an opaque origin), with no scripting (pdf.js is told not to evaluate, and the policy forbids it): a PDF's JavaScript never runs.
import { getDocument, GlobalWorkerOptions } from 'pdfjs-dist';
import * as worker from 'pdfjs-dist/build/pdf.worker.mjs';
import './pdf-preview.css';

/** Pages drawn at most; the rest are left to the download. */
const MAX_PAGES = 20;
/** Bytes taken at most (the app sends no more; a larger message is refused here too). */
const MAX_BYTES = 20 * 1024 * 1024;
/** Canvas pixels per page at most, so a page of absurd size cannot exhaust the tab's memory. */
const MAX_PIXELS = 16_000_000;

(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = worker;
GlobalWorkerOptions.workerSrc = '';

const pages = document.getElementById('pages') as HTMLElement;

function say(text: string): void {
  const p = document.createElement('p');
  p.className = 'note';
  p.textContent = text;
  pages.append(p);
}

async function render(data: ArrayBuffer): Promise<void> {
  const pdf = await getDocument({
    data: new Uint8Array(data),
    // No code compiled from a PDF's fonts (the page's policy forbids eval as well).
    isEvalSupported: false,
    enableXfa: false,
    useWasm: false,
    useWorkerFetch: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
  }).promise;
  const width = Math.max(200, document.documentElement.clientWidth - 16);
  const count = Math.min(pdf.numPages, MAX_PAGES);
  for (let n = 1; n <= count; n++) {
    const page = await pdf.getPage(n);
    const base = page.getViewport({ scale: 1 });
    let scale = (width / base.width) * Math.min(2, window.devicePixelRatio || 1);
    if (base.width * base.height * scale * scale > MAX_PIXELS) scale = Math.sqrt(MAX_PIXELS / (base.width * base.height));
    const viewport = page.getViewport({ scale });
    const canvas = document.createElement('canvas');
    canvas.width = Math.floor(viewport.width);
    canvas.height = Math.floor(viewport.height);
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `Page ${n} of ${pdf.numPages}`);
    pages.append(canvas);
    await page.render({ canvas, viewport }).promise;
  }
  if (pdf.numPages > count) say(`Pages ${count + 1}–${pdf.numPages} are not shown here; download the file to read them.`);
  document.body.dataset.rendered = String(count);
}

let started = false;
window.addEventListener('message', (event: MessageEvent<unknown>) => {
  // Only the app that framed this page hands it a file, and only once.
  if (started || event.source !== window.parent || !(event.data instanceof ArrayBuffer)) return;
  started = true;
  if (event.data.byteLength > MAX_BYTES) return say('This file is too large to preview.');
  render(event.data).catch(() => say('This PDF could not be shown.'));
});
window.parent.postMessage('pdf-preview-ready', '*');
