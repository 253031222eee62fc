/**
 * One service per embedded data dir. A second service on the same `pipeline.data-dir` would
 * open the same PGlite files and Temporal's `temporal.db` from another process and corrupt
 * both, so the first one holds `<data-dir>/service.pid` while it runs. A file left by a
 * service that died (kill -9) names a pid that no longer runs and is taken over.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors';

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holderError(dataDir: string, file: string, holder: number): ConfigError {
  return new ConfigError(
    `pipeline.data-dir: ${dataDir} is in use by another running service (pid ${holder}); give this one its own data dir (PIPELINE_DATA_DIR) or stop the other (kill ${holder}; if no such service runs, delete ${file})`,
  );
}

/** The pid of a running service that holds the data dir, if any (not this process). */
function runningHolder(file: string): number | undefined {
  let holder = Number.NaN;
  try {
    holder = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(holder) && holder > 0 && holder !== process.pid && running(holder) ? holder : undefined;
}

/**
 * Checks, without taking it, that no running service holds the data dir: `npm start` asks this
 * before anything else, so a second start on the same data dir names the first one's pid
 * (left running after its `npm` wrapper was killed, say) instead of reporting its ports as taken.
 */
export function assertDataDirFree(dataDir: string): void {
  const file = join(dataDir, 'service.pid');
  const holder = runningHolder(file);
  if (holder !== undefined) throw holderError(dataDir, file, holder);
}

/** Takes the data dir for this process; returns the release. Throws a ConfigError naming the key when another service holds it. */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'service.pid');
  const release = () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = runningHolder(file);
    if (holder !== undefined) throw holderError(dataDir, file, holder);
    try {
      unlinkSync(file); // left by a service that is gone (or by this process)
    } catch {
      // someone else removed it first
    }
  }
  throw new ConfigError(`pipeline.data-dir: could not take ${file}; another service is starting on the same data dir`);
}
