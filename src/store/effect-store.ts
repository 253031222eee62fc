/**
 * CommandEffectStore: one row per Command step of an execution. A step claims its
 * effect (IN_FLIGHT, with the transition identity) before invoking the operator; the
 * step's commit records the outcome in the same statement as the record's transition.
 *
 * A claim succeeds for a new effect, for a FAILED_RETRYABLE one (the next attempt is
 * claimed atomically), and for an IN_FLIGHT one held by the same transition identity
 * (a redelivery after a worker crash, which the operator boundary dedupes by that key).
 * Every other status is never redispatched.
 *
 * An effect belongs to its step by name, not by index: a re-drive that moves an execution
 * to another definition version finds the step's retained effect wherever the step sits
 * now (`step_index` is where it sat at its last claim).
 */
import type { EffectStatus } from '../spec-words';
import { z } from 'zod';
import type { Db } from './db';
import { bool, readRow } from './columns';
import { CommandEffectColumns, iso } from './rows';

export interface CommandEffect {
  tenantId: string;
  executionId: string;
  stepIndex: number;
  stepName: string;
  status: EffectStatus;
  attempt: number;
  transitionKey: string;
  result: unknown;
  errorCode: string | null;
  createdAt: string;
  updatedAt: string;
}

export type ClaimOutcome = { claimed: true } | { claimed: false; effect: CommandEffect };

/** What a step asks for when it claims its effect: the transition identity of this attempt. */
export interface EffectClaim {
  tenantId: string;
  executionId: string;
  stepIndex: number;
  stepName: string;
  attempt: number;
  transitionKey: string;
  /** claim only an effect that does not exist yet (or this transition's own IN_FLIGHT claim); default false */
  onlyNew?: boolean;
}

/** A claim's answer: whether it claimed, and (when not) the effect that blocks it. */
const ClaimAnswer = z.object({ claimed: bool });

/** command_effect's mapper: a row (every column checked) as the effect. */
export function toEffect(value: unknown): CommandEffect {
  const row = readRow('command_effect', CommandEffectColumns, value);
  return {
    tenantId: row.tenant_id,
    executionId: row.execution_id,
    stepIndex: row.step_index,
    stepName: row.step_name,
    status: row.status,
    attempt: row.attempt,
    transitionKey: row.transition_key,
    result: row.result,
    errorCode: row.error_code,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export class EffectStore {
  constructor(readonly db: Db) {}

  /**
   * One round trip: claim, or return the effect that blocks the claim. `onlyNew` (the
   * first step of an ordinary replay) claims only an effect that does not exist yet (or
   * its own IN_FLIGHT claim, redelivered): ordinary replay never redispatches a retained
   * effect, FAILED_RETRYABLE included.
   */
  async claim({ tenantId, executionId, stepIndex, stepName, attempt, transitionKey, onlyNew = false }: EffectClaim): Promise<ClaimOutcome> {
    const result = await this.db.query(
      `WITH claimed AS (
         INSERT INTO command_effect (tenant_id, execution_id, step_index, step_name, status, attempt, transition_key)
         VALUES ($1, $2, $3, $4, 'IN_FLIGHT', $5, $6)
         ON CONFLICT (tenant_id, execution_id, step_name) DO UPDATE
           SET status = 'IN_FLIGHT', step_index = EXCLUDED.step_index, attempt = EXCLUDED.attempt, transition_key = EXCLUDED.transition_key,
               error_code = NULL, updated_at = now()
           WHERE (command_effect.status = 'IN_FLIGHT' AND command_effect.transition_key = EXCLUDED.transition_key)
              OR (NOT $7::boolean AND command_effect.status = 'FAILED_RETRYABLE')
         RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, e.*
       FROM (SELECT 1) AS one
       LEFT JOIN command_effect e ON e.tenant_id = $1 AND e.execution_id = $2 AND e.step_name = $4
         AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [tenantId, executionId, stepIndex, stepName, attempt, transitionKey, onlyNew],
    );
    const row = result.rows[0];
    if (!row || readRow('command_effect', ClaimAnswer, row).claimed) return { claimed: true };
    return { claimed: false, effect: toEffect(row) };
  }

  async list(tenantId: string, executionId: string): Promise<CommandEffect[]> {
    const result = await this.db.query('SELECT * FROM command_effect WHERE tenant_id = $1 AND execution_id = $2 ORDER BY step_index', [tenantId, executionId]);
    return result.rows.map(toEffect);
  }

  /**
   * The retained effect of a step: by name (what the engine and re-drive use), or by the
   * index of its last claim (the newest, should two versions have used the index).
   */
  /** The latest effect of every Command step of the listed executions, in one statement: (executionId, step name) → effect. */
  async getMany(tenantId: string, executionIds: string[]): Promise<Map<string, CommandEffect>> {
    const result = await this.db.query(
      `SELECT DISTINCT ON (execution_id, step_name) * FROM command_effect WHERE tenant_id = $1 AND execution_id = ANY($2::text[])
       ORDER BY execution_id, step_name, updated_at DESC`,
      [tenantId, executionIds],
    );
    return new Map(result.rows.map(toEffect).map((effect) => [effectKey(effect.executionId, effect.stepName), effect]));
  }

  async get(tenantId: string, executionId: string, step: string | number): Promise<CommandEffect | null> {
    const result = await this.db.query(
      `SELECT * FROM command_effect WHERE tenant_id = $1 AND execution_id = $2 AND ${typeof step === 'string' ? 'step_name' : 'step_index'} = $3
       ORDER BY updated_at DESC LIMIT 1`,
      [tenantId, executionId, step],
    );
    return result.rowCount ? toEffect(result.rows[0]) : null;
  }
}

/** The key of `getMany`'s answer. */
export const effectKey = (executionId: string, stepName: string) => `${executionId}\u0000${stepName}`;
