/**
 * Set-up file for every test file: the file's Postgres connections, and those of the processes
 * it starts (they inherit the environment), carry its path as their `application_name`, so
 * `pg_stat_activity` says which file holds them when suites run side by side.
 */
import { relative } from 'node:path';
import { expect } from 'vitest';

const file = expect.getState().testPath;
if (file) process.env.PGAPPNAME = `test ${relative(process.cwd(), file)}`.slice(0, 63);
