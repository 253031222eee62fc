/** A real pino log (the service's own `createLog`) whose JSON lines a test reads back as objects. */
import { Writable } from 'node:stream';
import { createLog } from '../../src/log';

export function captureLog(): { log: ReturnType<typeof createLog>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLog({
    destination: new Writable({
      write(chunk, _e, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  });
  return { log, lines };
}
