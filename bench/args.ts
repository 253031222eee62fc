/**
 * The bench's command-line values that take more than a number: checked here, apart from
 * bench/run.ts (which starts measuring as it loads), so their rules have unit tests.
 */
import { isIP } from 'node:net';

/**
 * Why `--temporal-address` cannot be used, or undefined: host:port, the host a name (letters,
 * digits, `.`, `-`, `_`; not starting or ending with `.` or `-`), an IPv4 address or an IPv6
 * address in brackets, the port 1–65535.
 */
export function temporalAddressProblem(text: string): string | undefined {
  const match = /^(?:\[([^\]]+)\]|([A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || (match[1] !== undefined && isIP(match[1]) !== 6) || !(port >= 1 && port <= 65535)) {
    return `--temporal-address must be host:port, as in temporal.internal:7233 (got ${text})`;
  }
  return undefined;
}
