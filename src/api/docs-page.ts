/**
 * The API reference: the OpenAPI document at `/{prefix}/openapi.json` and Swagger UI at
 * `/{prefix}/docs`, served from the swagger-ui-dist package (no CDN, so it works offline).
 * Both are documentation, not data: they answer without a token unless
 * `pipeline.admin.docs-require-token` is set. "Try it out" is authorised with the page's own
 * Authorize button (the bearer security scheme); the token stays in this browser
 * (persistAuthorization) and is sent only to this service's routes.
 */
import { packagePath } from '../paths';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Hono, MiddlewareHandler } from 'hono';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'init.js': 'text/javascript; charset=utf-8',
};

/** The product's version, as package.json says it: the reference page's badge. */
export const PACKAGE_VERSION: string = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')).version;

/** Groups of the reference page, in order, for operations the document leaves untagged. */
const TAGS: { name: string; description: string; match: RegExp }[] = [
  { name: 'submit', description: 'Start executions, publish checkpoints, read results (submit or admin token)', match: /^\/[^/]+\/api\// },
  {
    name: 'executions',
    description: 'ExecutionRecords, their Command effects and history, and the single re-drive',
    match: /\/admin\/tenants\/[^/]+\/executions/,
  },
  { name: 'dlq', description: 'The Execution DLQ (read-only), its failure groups, and item rejects', match: /\/admin\/tenants\/[^/]+\/(dlq|rejects)/ },
  { name: 'redrive-jobs', description: 'Bulk re-drive jobs: dry run, start, follow, pause, resume, abort', match: /\/admin\/tenants\/[^/]+\/redrive-jobs/ },
  { name: 'triage', description: 'Signals and their classification', match: /\/triage$/ },
  { name: 'pipelines', description: 'Pipeline definitions and their versions', match: /\/admin\/tenants\/[^/]+\/pipelines/ },
  { name: 'codec', description: 'The payload codec endpoint the Temporal UI decodes with', match: /^\/codec\// },
  { name: 'health', description: 'Liveness, readiness and metrics (no token)', match: /^\/(healthz|readyz|metrics)$/ },
  { name: 'other', description: 'Everything else', match: /./ },
];

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * The document as the reference serves it: the version is package.json's, every operation
 * the document left untagged gets the group of its path, and the ±2^53−1 bounds zod writes
 * on every integer (they say nothing, and Swagger UI shows -9007199254740991 as the example)
 * are left out.
 */
export function referenceDocument(document: any): any {
  const doc = structuredClone(document);
  doc.info = { ...doc.info, version: PACKAGE_VERSION };
  const used = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const operation of Object.values<any>(item)) {
      if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
      if (!operation.tags?.length) operation.tags = [TAGS.find((tag) => tag.match.test(path))!.name];
      for (const tag of operation.tags) used.add(tag);
    }
  }
  const declared = new Set((doc.tags ?? []).map((tag: any) => tag.name));
  doc.tags = [
    ...(doc.tags ?? []),
    ...TAGS.filter((tag) => used.has(tag.name) && !declared.has(tag.name)).map(({ name, description }) => ({ name, description })),
  ];
  dropSafeIntegerBounds(doc);
  return doc;
}

function dropSafeIntegerBounds(node: any): void {
  if (Array.isArray(node)) return node.forEach(dropSafeIntegerBounds);
  if (!node || typeof node !== 'object') return;
  if (node.type === 'integer') {
    if (node.minimum === -SAFE) delete node.minimum;
    if (node.maximum === SAFE) delete node.maximum;
  }
  for (const value of Object.values(node)) dropSafeIntegerBounds(value);
}

function page(prefix: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pipeline orchestrator API ${PACKAGE_VERSION}</title>
<link rel="stylesheet" href="${prefix}/docs/assets/swagger-ui.css"></head>
<body><div id="ui" data-document="${prefix}/openapi.json"></div>
<script src="${prefix}/docs/assets/swagger-ui-bundle.js"></script>
<script src="${prefix}/docs/assets/init.js"></script>
</body></html>`;
}

/** The page's own script, served as an asset so the page's policy allows no inline script. */
const INIT_SCRIPT = `// No token to read the reference; "Authorize" (top right) holds one for "Try it out".
window.ui = SwaggerUIBundle({
  url: document.getElementById('ui').dataset.document,
  dom_id: '#ui',
  persistAuthorization: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  onComplete: () => document.body.setAttribute('data-reference', 'ready'),
});
`;

/**
 * The headers every answer of the reference carries: nothing of it may be framed (clickjacking
 * on "Try it out"), sniffed into another type, or run script from anywhere but this service.
 * Swagger UI sets inline styles and data: images, so those two are allowed; its requests (the
 * document, "Try it out") go to this origin only.
 */
export const REFERENCE_PAGE_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};
/** The document and the assets: data, never a page. */
export const REFERENCE_DATA_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
};

/**
 * Mounts the document and the page. `auth` guards both when the configuration asks for a
 * token (`pipeline.admin.docs-require-token`); the page then needs the token in the
 * browser's Authorization header, as from a proxy.
 */
export function mountDocs(app: Hono<any>, prefix: string, document: unknown, auth?: MiddlewareHandler): void {
  // The package's own directory (what its untyped getAbsoluteFSPath() answers), found without importing it.
  const root = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const cache = new Map<string, string>();
  const served = referenceDocument(document);
  const guard: MiddlewareHandler = auth ?? (async (_c, next) => next());
  app.get(`${prefix}/openapi.json`, guard, (c) => c.json(served, 200, REFERENCE_DATA_HEADERS));
  app.get(`${prefix}/docs`, guard, (c) => c.html(page(prefix), 200, REFERENCE_PAGE_HEADERS));
  app.get(`${prefix}/docs/assets/:file`, (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type) return c.notFound();
    if (!cache.has(file)) cache.set(file, file === 'init.js' ? INIT_SCRIPT : readFileSync(join(root, file), 'utf8'));
    return c.body(cache.get(file)!, 200, { ...REFERENCE_DATA_HEADERS, 'content-type': type, 'cache-control': 'public, max-age=86400' });
  });
}
