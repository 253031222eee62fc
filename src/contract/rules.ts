/**
 * Rules between the members of a request body ("`intent` requires `allowFailed: true`"),
 * written once: the handler's schema checks them (zod), and the OpenAPI document states
 * them (JSON Schema), so a client that follows the document is not refused by a rule it
 * could not see.
 */
import type { z } from 'zod';

/** When `member` is present, `requires` must be present and equal `value`. */
export interface RequiresRule {
  member: string;
  requires: string;
  value: unknown;
  message: string;
}
/** `member` and `excludes` are never both present (the issue is at `excludes`). */
export interface ExcludesRule {
  member: string;
  excludes: string;
  message: string;
}
export type MemberRule = RequiresRule | ExcludesRule;

/** JSON Schema for one rule: `member` is absent, or `requires` is there with its value; or the two are not both there. */
function ruleSchema(rule: MemberRule) {
  if ('excludes' in rule) return { not: { required: [rule.member, rule.excludes] } };
  return { anyOf: [{ not: { required: [rule.member] } }, { required: [rule.requires], properties: { [rule.requires]: { const: rule.value } } }] };
}

function broken(rule: MemberRule, body: Record<string, unknown>): boolean {
  if ('excludes' in rule) return body[rule.member] !== undefined && body[rule.excludes] !== undefined;
  return body[rule.member] !== undefined && body[rule.requires] !== rule.value;
}

/** `schema` checking every rule (an issue at the member's path), with the rules in its OpenAPI rendering. */
export function withRules<S extends z.ZodObject>(schema: S, rules: MemberRule[]) {
  return schema
    .superRefine((body: Record<string, unknown>, ctx) => {
      for (const rule of rules) {
        if (broken(rule, body)) ctx.addIssue({ code: 'custom', path: ['excludes' in rule ? rule.excludes : rule.member], message: rule.message });
      }
    })
    .meta({
      override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
        jsonSchema.allOf = [...((jsonSchema.allOf as unknown[]) ?? []), ...rules.map(ruleSchema)];
      },
    });
}

/** `intent: RETRY_FAILED_COMMAND` is a deliberate retry of a FAILED execution: it needs `allowFailed: true`. */
export const INTENT_NEEDS_ALLOW_FAILED: MemberRule = {
  member: 'intent',
  requires: 'allowFailed',
  value: true,
  message: 'intent RETRY_FAILED_COMMAND requires allowFailed=true',
};
