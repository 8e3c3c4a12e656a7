import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const BOX = 'papers@mailroom.localhost';
const WAIT = { timeout: 20_000 };
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A one-page PDF built here: its objects, then an xref table of their byte offsets. `extra` goes in the catalog. */
function pdf(text: string, extra = '', more: string[] = []): Buffer {
  const stream = `BT /F1 36 Tf 72 700 Td (${text}) Tj ET 0 0 1 rg 72 300 400 300 re f`;
  const objects = [
    `<< /Type /Catalog /Pages 2 0 R ${extra} >>`,
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    ...more,
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

async function violations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string }> }>("axe.run(document, { iframes: false, resultTypes: ['violations'] })");
  return result.violations.map((v) => v.id);
}

/** How many of the page canvas's pixels are not white (the PDF drew something). */
const inkedPixels = (frame: Frame) =>
  frame.evaluate<number>(`(() => {
    const canvas = document.querySelector('canvas');
    if (!canvas || document.body.dataset.rendered !== '1') return 0;
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let inked = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 200 || data[i + 1] < 200 || data[i + 2] < 200) inked++;
    return inked;
  })()`);

describe.skipIf(!HAS_CHROMIUM)(`web app: PDF previews in an opaque-origin frame (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  const requests: string[] = [];

  const deliver = async (subject: string, filename: string, content: Buffer): Promise<string> =>
    (await h.send({ from: 'alice@sender.test', to: BOX, subject, text: 'Attached.', attachments: [{ filename, content, contentType: 'application/pdf' }] }))
      .response.match(/msg_[0-9a-z]{26}/)![0];

  /** Opens the message, previews its PDF and answers the preview's frame once pdf.js has drawn the page. */
  async function preview(id: string, filename: string): Promise<Frame> {
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox/${id}`);
    await page.getByRole('button', { name: `Preview ${filename}` }).click();
    const element = page.getByTitle(`Preview of ${filename}`);
    await element.waitFor();
    expect(await element.getAttribute('sandbox')).toBe('allow-scripts');
    const found = await (await element.elementHandle()).contentFrame();
    expect(found).not.toBeNull();
    await expect.poll(() => inkedPixels(found!), WAIT).toBeGreaterThan(1000);
    return found!;
  }

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: BOX } })).statusCode).toBe(201);
    browser = await startBrowser();
    page = await browser.page();
    page.setDefaultTimeout(15_000);
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => requests.push(r.url()));
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('draws a PDF with pdf.js in a frame of its own origin, with a strict policy, loaded only for the preview', async () => {
    const id = await deliver('Invoice', 'invoice.pdf', pdf('Invoice 42'));
    requests.length = 0;
    const frame = await preview(id, 'invoice.pdf');
    // The app's first load carries none of it: the preview page and pdf.js came with the preview.
    expect(requests.some((u) => u.endsWith('/pdf-preview.html'))).toBe(true);
    expect(requests.some((u) => /\/assets\/pdf-preview-[\w-]+\.js$/.test(u))).toBe(true);
    expect(await (await page.request.get(`${base}/`, { headers: { accept: 'text/html' } })).text()).not.toContain('pdf-preview');
    const res = await page.request.get(`${base}/pdf-preview.html`, { headers: { accept: 'text/html' } });
    const csp = res.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'none'");
    expect(csp).not.toContain('unsafe-eval');
    // The page is drawn: a canvas with the text and the blue box, named as page 1 of 1.
    expect(await frame.getByRole('img', { name: 'Page 1 of 1' }).count()).toBe(1);
    expect(await violations(page)).toEqual([]);
  });

  it('runs none of a hostile PDF\'s JavaScript, and the frame can read neither the app nor its storage', async () => {
    const hostile = pdf('Hostile', '/OpenAction 6 0 R /Names << /JavaScript << /Names [(x) 6 0 R] >> >>', [
      `<< /S /JavaScript /JS (app.alert\\('pdf script ran'\\); this.submitForm\\('${base}/ran'\\);) >>`,
    ]);
    const id = await deliver('Hostile', 'hostile.pdf', hostile);
    requests.length = 0;
    const frame = await preview(id, 'hostile.pdf');
    expect(await page.evaluate("sessionStorage.getItem('mailroom.session')")).toMatch(/./);
    const reach = await frame.evaluate(`(() => {
      const tryIt = (f) => { try { return String(f()); } catch (e) { return 'blocked: ' + e.name; } };
      return { own: tryIt(() => sessionStorage.getItem('mailroom.session')), parent: tryIt(() => parent.sessionStorage.getItem('mailroom.session')),
        cookie: tryIt(() => document.cookie), origin: String(self.origin) };
    })()`);
    expect(reach).toEqual({ own: 'blocked: SecurityError', parent: 'blocked: SecurityError', cookie: 'blocked: SecurityError', origin: 'null' });
    expect(dialogs).toEqual([]);
    expect(requests.filter((u) => u.endsWith('/ran'))).toEqual([]);
  });
});
