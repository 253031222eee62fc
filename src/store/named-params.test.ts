import { describe, expect, it } from 'vitest';
import { named } from './named-params';

describe('named statement parameters', () => {
  it("numbers the placeholders in the values' order and sends the values in that order, whatever order the text uses them in", () => {
    const statement = named(
      { tenantId: 't', executionId: 'e', version: 3 },
      (p) => `UPDATE r SET v = ${p.version} WHERE t = ${p.tenantId} AND e = ${p.executionId} AND v2 = ${p.version}`,
    );
    expect(statement).toEqual({ text: 'UPDATE r SET v = $3 WHERE t = $1 AND e = $2 AND v2 = $3', params: ['t', 'e', 3] });
  });

  it('refuses a value the text never uses, and a placeholder that has no value, naming them', () => {
    expect(() => named({ tenantId: 't', stray: 1, other: 2 }, (p) => `SELECT ${p.tenantId}`)).toThrow('never used in its text: stray, other');
    // A typo the compiler would catch; at run time (an untyped caller) it is thrown too.
    expect(() => named({ tenantId: 't' }, (p) => `SELECT ${Reflect.get(p, 'tenantID')}`)).toThrow('tenantID is not among its values');
  });
});
