/**
 * Migrations on a real database: a second run applies nothing, and a database migrated by
 * a newer build (a version this build has no file for) is said in the log.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { listMigrations, migrate, unknownMigrations } from '../../src/store/migrate';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { migrationFromNewerBuild } from '../helpers/unreachable-states';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe('migrate', () => {
  it('applies nothing twice and says nothing when the database matches the build', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLog({
      destination: new Writable({
        write(chunk, _e, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    });
    expect(await migrate(database.db, log)).toEqual([]);
    expect(await unknownMigrations(database.db)).toEqual([]);
    expect(lines.filter((line) => line.event === 'schema_migrations_unknown')).toEqual([]);
    const recorded = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migration');
    expect(recorded.rows[0].n).toBe(listMigrations().length);
  });

  it('warns, naming the versions, when the database has migrations this build does not know', async () => {
    await migrationFromNewerBuild(database.db, '29991231235959', 'from_a_newer_build');
    const lines: Record<string, unknown>[] = [];
    const log = createLog({
      destination: new Writable({
        write(chunk, _e, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    });
    expect(await migrate(database.db, log)).toEqual([]);
    expect(lines.filter((line) => line.event === 'schema_migrations_unknown')).toEqual([
      expect.objectContaining({ level: 'warn', versions: ['29991231235959'] }),
    ]);
  });
});
