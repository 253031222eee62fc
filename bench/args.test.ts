import { describe, expect, it } from 'vitest';
import { temporalAddressProblem } from './args';

describe('temporalAddressProblem', () => {
  it.each(['temporal.internal:7233', 'temporal:7233', 'temporal_frontend:7233', '10.0.0.5:7233', '[::1]:7233', '[2001:db8::7]:443', 'h:1', 'h:65535'])(
    'takes %j',
    (address) => expect(temporalAddressProblem(address)).toBeUndefined(),
  );
  it.each([
    'nohost',
    'host:0',
    'host:70000',
    'a b:7233',
    'http://host:7233',
    '[:]:7233',
    '[zz::1]:7233',
    '-:7233',
    '.host:7233',
    'host:',
    ':7233',
    'host:7233/',
  ])('refuses %j, naming the flag', (address) =>
    expect(temporalAddressProblem(address)).toBe(`--temporal-address must be host:port, as in temporal.internal:7233 (got ${address})`),
  );
});
