import { createHash } from 'node:crypto';

/** Hex SHA-256 of a UTF-8 string: how bearer tokens are configured and compared. */
export function sha256Hex(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
