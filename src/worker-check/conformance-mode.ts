/**
 * Conformance mode: the input shape the checker sends and what a worker under check
 * answers (docs/transition-workers.md, "Conformance mode"). The kit owns it
 * (`withConformanceMode` from @pipeline-orchestrator/worker-kit); the checker reads the
 * same types.
 */
export { isConformanceInput, withConformanceMode, type ConformanceInput, type ConformanceOutput } from '@pipeline-orchestrator/worker-kit';
