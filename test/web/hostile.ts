/**
 * Hostile HTML mail: every shape that would run script, navigate, submit or fetch. Each script would mark the
 * document (`data-pwned`) or set a global; each fetch would reach the receiver at `origin`.
 */
export function hostileHtml(origin: string): string {
  const mark = "document.documentElement.setAttribute('data-pwned','1');window.pwned=1";
  return `<!doctype html><html><head>
<meta http-equiv="refresh" content="0;url=${origin}/meta-refresh">
<base href="${origin}/base/">
<link rel="stylesheet" href="${origin}/link.css">
<style>@import url(${origin}/import.css); body { background: url('${origin}/css-style.png'); } p.x { background-image: url(${origin}/css-class.png) }</style>
<script>${mark};fetch('${origin}/script')</script>
</head><body onload="${mark}">
<p class="x">Hello <b>friend</b>, see <a href="https://example.com/offer">our offer</a> and <a href="relative/path">this</a>.</p>
<a id="js" href="javascript:${mark}">click me</a>
<a href="  JaVaScRiPt:${mark}">click me too</a>
<a href="data:text/html,<script>${mark}</script>">data link</a>
<img src="x" onerror="${mark}">
<img src="${origin}/tracker.gif" alt="tracker">
<img srcset="${origin}/srcset.png 2x">
<div style="background:url(${origin}/css-inline.png)">inline style</div>
<form action="${origin}/form" method="post"><input name="card" value="4111"><button>Pay</button></form>
<svg onload="${mark}"><script>${mark}</script><image href="${origin}/svg-image.png"/><a href="javascript:${mark}"><text>svg link</text></a></svg>
<iframe src="${origin}/iframe"></iframe>
<iframe srcdoc="<script>parent.${mark}</script>"></iframe>
<object data="${origin}/object"></object><embed src="${origin}/embed">
<video poster="${origin}/poster.png"><source src="${origin}/video.mp4"></video>
<details open ontoggle="${mark}"><summary>toggle</summary></details>
<math><mtext><table><mglyph><style><img src=x onerror="${mark}"></style></mglyph></table></mtext></math>
<noscript><p title="</noscript><img src=x onerror=${mark}>"></p></noscript>
<input autofocus onfocus="${mark}">
</body></html>`;
}
