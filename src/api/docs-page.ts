/**
 * The API reference page: Swagger UI served from the swagger-ui-dist package (no CDN,
 * so it works offline). The page holds no data; it asks for a bearer token, fetches
 * openapi.json with it (the document is behind auth like every route but health) and
 * pre-authorises "Try it out" with the same token.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { getAbsoluteFSPath } from 'swagger-ui-dist';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

function page(prefix: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pipeline orchestrator API</title>
<link rel="stylesheet" href="${prefix}/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="${prefix}/docs/assets/swagger-ui-bundle.js"></script>
<script>
  const key = 'pipeline-api-token';
  const token = sessionStorage.getItem(key) || prompt('Bearer token for the API (kept in this tab only)') || '';
  sessionStorage.setItem(key, token);
  fetch('${prefix}/openapi.json', { headers: { authorization: 'Bearer ' + token } })
    .then((res) => { if (!res.ok) { sessionStorage.removeItem(key); throw new Error('openapi.json answered ' + res.status); } return res.json(); })
    .then((spec) => { const ui = SwaggerUIBundle({ spec, dom_id: '#ui' }); ui.preauthorizeApiKey('bearer', token); })
    .catch((err) => { document.getElementById('ui').textContent = String(err); });
</script></body></html>`;
}

export function mountDocs(app: Hono<any>, prefix: string): void {
  const root = getAbsoluteFSPath();
  const cache = new Map<string, string>();
  app.get(`${prefix}/docs`, (c) => c.html(page(prefix)));
  app.get(`${prefix}/docs/assets/:file`, (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type) return c.notFound();
    if (!cache.has(file)) cache.set(file, readFileSync(join(root, file), 'utf8'));
    return c.body(cache.get(file)!, 200, { 'content-type': type, 'cache-control': 'public, max-age=86400' });
  });
}
