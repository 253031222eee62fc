/**
 * Migrations on a real database and on PGlite: each file runs whole (dollar-quoted function
 * bodies with `;` at the end of lines, several statements), a file that fails part-way leaves
 * nothing behind, a second run applies nothing, and a database migrated by a newer build (a
 * version this build has no file for) is said in the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgliteDb, type Db } from '../../src/store/db';
import { listMigrations, migrate, unknownMigrations, type Migration } from '../../src/store/migrate';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { migrationFromNewerBuild } from '../helpers/unreachable-states';
import { captureLog as capture } from '../helpers/log-capture';

let database: TestDatabase;
let lite: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  lite = await createPgliteDb('memory://migrate');
  await migrate(lite);
});
afterAll(async () => {
  await database?.drop();
  await lite?.close();
});

/** A file as a person writes it: plpgsql in its ordinary form, a `;` ending each line. */
const ORDINARY: Migration = {
  version: '29990101000000',
  name: 'ordinary_plpgsql',
  sql: `-- a comment; with a semicolon
CREATE TABLE migrate_probe (n int NOT NULL);
CREATE FUNCTION migrate_probe_double() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.n := NEW.n * 2;
  IF NEW.n > 100 THEN
    NEW.n := 100;
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER migrate_probe_double BEFORE INSERT ON migrate_probe FOR EACH ROW EXECUTE FUNCTION migrate_probe_double();
INSERT INTO migrate_probe (n) VALUES (21), (70);
`,
};
/** Its first statements are valid; the last is not: the whole file must roll back. */
const BROKEN: Migration = {
  version: '29990101000001',
  name: 'broken_part_way',
  sql: `CREATE TABLE migrate_half (n int);
INSERT INTO migrate_half VALUES (1);
SELECT no_such_function();
`,
};

describe.each([
  ['postgres', () => database.db],
  ['pglite', () => lite],
])('migrate on %s', (_kind, db) => {
  it('applies nothing twice and says nothing when the database matches the build', async () => {
    const { log, lines } = capture();
    expect(await migrate(db(), log)).toEqual([]);
    expect(await unknownMigrations(db())).toEqual([]);
    expect(lines.filter((line) => line.event === 'schema_migrations_unknown')).toEqual([]);
    const recorded = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migration');
    expect(recorded.rows[0].n).toBe(listMigrations().length);
  });

  it('runs a file whole: plpgsql in its ordinary form, then the statements after it', async () => {
    expect(await migrate(db(), undefined, [ORDINARY])).toEqual([ORDINARY.version]);
    const rows = await db().query<{ n: number }>('SELECT n FROM migrate_probe ORDER BY n');
    expect(rows.rows.map((row) => row.n)).toEqual([42, 100]);
    expect(await migrate(db(), undefined, [ORDINARY])).toEqual([]);
    await db().exec(`DROP TABLE migrate_probe; DROP FUNCTION migrate_probe_double(); DELETE FROM schema_migration WHERE version = '${ORDINARY.version}'`);
  });

  it('leaves nothing of a file that fails part-way, and records no version for it', async () => {
    await expect(migrate(db(), undefined, [BROKEN])).rejects.toThrow(/no_such_function/);
    const table = await db().query("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'migrate_half'");
    expect(table.rowCount).toBe(0);
    const version = await db().query('SELECT 1 FROM schema_migration WHERE version = $1', [BROKEN.version]);
    expect(version.rowCount).toBe(0);
  });

  it('warns, naming the versions, when the database has migrations this build does not know', async () => {
    await migrationFromNewerBuild(db(), '29991231235959', 'from_a_newer_build');
    const { log, lines } = capture();
    expect(await migrate(db(), log)).toEqual([]);
    expect(lines.filter((line) => line.event === 'schema_migrations_unknown')).toEqual([
      expect.objectContaining({ level: 'warn', versions: ['29991231235959'] }),
    ]);
  });
});

describe('the migration that queues a record for one dispatch (20261128070000)', () => {
  it("queues each QUEUED record for its newest dispatch row, leaves others alone, and gives new records 'start'", async () => {
    const db = await createPgliteDb('memory://record-dispatch');
    try {
      await migrate(
        db,
        undefined,
        listMigrations().filter((migration) => migration.version < '20261128070000'),
      );
      await db.query(
        `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt)
         VALUES ('t', 'queued', 'p', 'queued', 'QUEUED', 4, 2, 1, 2), ('t', 'failed', 'p', 'failed', 'FAILED', 3, 2, 1, 1)`,
      );
      await db.query(
        `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, status, created_at) VALUES
           ('t', 'queued', 'start', '{}', 'STARTED', now() - interval '1 hour'),
           ('t', 'queued', 'redrive-1', '{}', 'PENDING', now()),
           ('t', 'failed', 'start', '{}', 'STARTED', now())`,
      );
      expect(await migrate(db)).toContain('20261128070000');
      await db.query(
        `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt)
         VALUES ('t', 'new', 'p', 'new', 'QUEUED', 1, 2, 0, 1)`,
      );
      const rows = await db.query<{ execution_id: string; dispatch_id: string | null }>(
        'SELECT execution_id, dispatch_id FROM execution_record ORDER BY execution_id',
      );
      expect(rows.rows).toEqual([
        { execution_id: 'failed', dispatch_id: null },
        { execution_id: 'new', dispatch_id: 'start' },
        { execution_id: 'queued', dispatch_id: 'redrive-1' },
      ]);
    } finally {
      await db.close();
    }
  });
});
