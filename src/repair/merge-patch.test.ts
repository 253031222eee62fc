import { describe, expect, it } from 'vitest';
import { canonicalJson, changedPaths, fingerprint, mergePatch } from './merge-patch';

describe('mergePatch (RFC 7396)', () => {
  // RFC 7396 Appendix A, every row: original, patch, result.
  const examples: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(examples)('MergePatch(%j, %j) = %j', (original, patch, result) => {
    expect(mergePatch(original, patch)).toEqual(result);
  });

  it('changes neither argument', () => {
    const original = { a: { b: 1 } };
    const patch = { a: { b: 2, c: null } };
    mergePatch(original, patch);
    expect(original).toEqual({ a: { b: 1 } });
    expect(patch).toEqual({ a: { b: 2, c: null } });
  });
});

describe('changedPaths', () => {
  it('names each member added, removed or changed, as JSON Pointers', () => {
    expect(changedPaths({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { a: 1, b: { c: 5 }, e: [1, 2], 'f/g': true })).toEqual(['/b/c', '/b/d', '/e', '/f~1g']);
  });
  it('names the whole value when its kind changes, nothing when equal', () => {
    expect(changedPaths({ a: 1 }, [1])).toEqual(['']);
    expect(changedPaths({ a: 1, b: 2 }, { b: 2, a: 1 })).toEqual([]);
  });
});

describe('fingerprint', () => {
  it('is the same for equal values whatever their member order, and differs otherwise', () => {
    expect(fingerprint({ a: 1, b: [2] })).toBe(fingerprint({ b: [2], a: 1 }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
    expect(fingerprint({ secret: 'sentinel' })).not.toContain('sentinel');
    expect(canonicalJson({ b: 1, a: undefined })).toBe('{"b":1}');
  });
});
