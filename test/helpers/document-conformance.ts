/**
 * Every answer a test receives, checked against the served OpenAPI document: the operation
 * (method and path template) must list the status, and the body must match the schema the
 * document gives for that status and media type (ajv, draft 2020-12 as OpenAPI 3.1 uses).
 * A path the document does not declare (a 404 route, the docs page's assets) is not checked.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export interface DocumentChecker {
  /** The document's operation path for `METHOD concretePath` (`/pipeline/admin/tenants/{tenantId}/…`), or undefined when it declares none. */
  operationOf(method: string, concretePath: string): string | undefined;
  /**
   * The validator of the document's schema for the operation `METHOD path` (a template) answering
   * `status` as `mediaType`; throws naming what the document lacks.
   */
  validatorOf(method: string, path: string, status: number, mediaType: string): ValidateFunction;
  /** The last validation's errors, as text. */
  errorsText(validate: ValidateFunction): string;
  /** Why this answer does not conform, or undefined when it does (or the route is not declared). */
  mismatch(method: string, concretePath: string, status: number, contentType: string | null, text: string): string | undefined;
}

export function documentChecker(document: any): DocumentChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const validators = new Map<string, ValidateFunction>();
  const validatorFor = (schema: object) => {
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (!validate) {
      // The schema with the document's components beside it, so its `#/components/…` references resolve.
      validate = ajv.compile({ ...schema, components: document.components });
      validators.set(key, validate);
    }
    return validate;
  };
  // Literal segments before parameters: `/dlq/groups` is matched before `/dlq/{id}` would be.
  const templates = Object.keys(document.paths ?? {})
    .map((path) => ({
      path,
      params: (path.match(/\{/g) ?? []).length,
      pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[A-Za-z]+\\?\}/g, '[^/]+')}$`),
    }))
    .sort((a, b) => a.params - b.params);

  const operationOf = (method: string, concretePath: string) => {
    // As the router sees it: `..` and `.` segments resolved, the query left out.
    const path = new URL(concretePath, 'http://service.invalid').pathname;
    return templates.find((t) => t.pattern.test(path) && document.paths[t.path][method.toLowerCase()])?.path;
  };

  const validatorOf = (method: string, path: string, status: number, mediaType: string) => {
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${path} is not in the document`);
    const response = operation.responses[String(status)];
    if (!response) throw new Error(`${method} ${path} answered ${status}, which the document does not list (${Object.keys(operation.responses).join(', ')})`);
    const schema = response.content?.[mediaType]?.schema;
    if (!schema)
      throw new Error(
        `${method} ${path} ${status}: the document has no ${mediaType || '(no content type)'} schema (it has ${Object.keys(response.content ?? {}).join(', ')})`,
      );
    return validatorFor(schema);
  };

  return {
    operationOf,
    validatorOf,
    errorsText: (validate) => ajv.errorsText(validate.errors),
    mismatch(method, concretePath, status, contentType, text) {
      const path = operationOf(method, concretePath);
      if (!path) return undefined;
      const response = document.paths[path][method.toLowerCase()].responses[String(status)];
      const mediaType = (contentType ?? '').split(';')[0].trim();
      if (response && !response.content) return text.length === 0 ? undefined : `${method} ${path} ${status}: the document gives no body, the answer has one`;
      if (response && !mediaType.endsWith('json') && response.content[mediaType]) return undefined;
      let validate: ValidateFunction;
      try {
        validate = validatorOf(method, path, status, mediaType);
      } catch (err) {
        return (err as Error).message;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return `${method} ${path} ${status}: the body is not JSON`;
      }
      return validate(body)
        ? undefined
        : `${method} ${path} ${status}: the body does not match the document: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 1000)}`;
    },
  };
}
