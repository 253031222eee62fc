/**
 * @pipeline-orchestrator/worker-kit: remote transition workers for the pipeline
 * orchestrator, over REST or gRPC, deduping deliveries by their tenant-qualified
 * idempotency key in Postgres. README.md in this package is the guide.
 */
export {
  createRestTransitionWorker,
  transitionCallOf,
  deliveryLimits,
  type KitDeliveryOptions,
  type RestTransitionWorkerOptions,
  type TransitionCall,
} from './rest-worker.js';
export { createGrpcTransitionWorker, type GrpcTransitionWorker, type GrpcTransitionWorkerOptions } from './grpc-worker.js';
export { LeaseLostError, TransitionRejectedError, TransitionRetryableError, Deliveries, type DeliveryLimits, type DeliveryOutcome } from './delivery.js';
export {
  DedupeStore,
  purgeDedupe,
  LEGACY_ROW_RESPONSE,
  type AbandonedClaims,
  type Claim,
  type DedupeState,
  type RecordedState,
  type StoredResponse,
} from './dedupe-store.js';
export { DEDUPE_MIGRATION, dedupeMigrationSql, ensureDedupeSchema } from './migration.js';
export type { KitLog, Queryable } from './ports.js';
export * from './protocol.js';
export { withConformanceMode, isConformanceInput, type ConformanceInput, type ConformanceOutput } from './conformance-mode.js';
