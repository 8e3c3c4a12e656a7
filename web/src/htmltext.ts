// The plain-text part of a message written as HTML, and the HTML a plain-text draft or quote starts the editor with.
// The text follows what mail readers expect of format=flowed-less text: a blank line between paragraphs, "- " list
// items, "text <url>" links and "> " quotes (decision 721).

const BLOCKS = new Set(['P', 'DIV', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'UL', 'OL', 'BLOCKQUOTE', 'PRE', 'HR', 'TABLE']);

function inline(node: Node): string {
  if (node.nodeType === Node.TEXT_NODE) return (node.textContent ?? '').replace(/\s+/g, ' ');
  if (!(node instanceof Element)) return '';
  if (node.tagName === 'BR') return '\n';
  // An inline image is a part of its own; the text part names it where it stood, as Gmail writes it.
  if (node.tagName === 'IMG') return `[image: ${node.getAttribute('alt') || 'image'}]`;
  const inner = [...node.childNodes].map(inline).join('');
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    const text = inner.trim();
    if (!href || href === text || `mailto:${text}` === href) return inner;
    return `${text} <${href.replace(/^mailto:/, '')}>`;
  }
  return inner;
}

/** The blocks of an element as lines of text, blank lines between blocks. */
function blocks(parent: Node, depth: number): string[] {
  const out: string[] = [];
  let run = '';
  const flush = () => {
    const text = run.split('\n').map((l) => l.trim()).join('\n').trim();
    if (text) out.push(text);
    run = '';
  };
  for (const node of parent.childNodes) {
    if (node instanceof Element && (BLOCKS.has(node.tagName) || node.tagName === 'LI')) {
      flush();
      out.push(...block(node, depth));
    } else run += inline(node);
  }
  flush();
  return out;
}

function block(el: Element, depth: number): string[] {
  switch (el.tagName) {
    case 'UL':
    case 'OL':
      return [[...el.children].filter((c) => c.tagName === 'LI').map((li, i) => listItem(li, el.tagName === 'OL' ? `${i + 1}. ` : '- ', depth)).join('\n')];
    case 'BLOCKQUOTE':
      return [blocks(el, 0).join('\n\n').split('\n').map((l) => (l.startsWith('>') ? `>${l}` : l ? `> ${l}` : '>')).join('\n')];
    case 'HR':
      return ['---'];
    case 'PRE':
      return [el.textContent ?? ''];
    default:
      return blocks(el, depth);
  }
}

function listItem(li: Element, marker: string, depth: number): string {
  const indent = '  '.repeat(depth);
  const lines = blocks(li, depth + 1).join('\n').split('\n');
  return lines.map((l, i) => (i === 0 ? `${indent}${marker}${l}` : l.startsWith(indent + '  ') ? l : `${indent}  ${l}`)).join('\n');
}

/** The text part for `html` (parsed inert by DOMParser: nothing in it runs or loads). */
export function htmlToText(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  for (const el of doc.querySelectorAll('script, style, head')) el.remove();
  return blocks(doc.body, 0).join('\n\n').replace(/\n{3,}/g, '\n\n').trim();
}

export function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}

/** HTML for plain text: a paragraph per blank-line-separated block, runs of "> " lines as a quote. */
export function textToHtml(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    if ((lines[i] ?? '').startsWith('>')) {
      const quoted: string[] = [];
      while (i < lines.length && (lines[i] ?? '').startsWith('>')) quoted.push((lines[i++] ?? '').replace(/^> ?/, ''));
      out.push(`<blockquote>${textToHtml(quoted.join('\n'))}</blockquote>`);
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && (lines[i] ?? '') !== '' && !(lines[i] ?? '').startsWith('>')) para.push(escapeHtml(lines[i++] ?? ''));
    if (para.length > 0) out.push(`<p>${para.join('<br>')}</p>`);
    else i++;
  }
  return out.join('');
}
