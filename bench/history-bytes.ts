/**
 * Bytes of a workflow history as the server stores and sends it (protobuf encoding), and
 * where they go: the start request's argument, memo, search attributes and UI metadata,
 * each activity's input, result and summary. What costs the Temporal server CPU per
 * execution is mostly bytes per event (persisted, replicated to visibility, sent to the
 * worker on every workflow task), since the event count equals bare Temporal's.
 */
// A default import: @temporalio/proto is CommonJS whose names Node's ESM loader cannot see.
import proto from '@temporalio/proto';
import type * as types from '@temporalio/proto';

const { temporal } = proto;
type IPayload = types.temporal.api.common.v1.IPayload;

type Payloads = types.temporal.api.common.v1.IPayloads | null | undefined;
type Payload = IPayload | null | undefined;

const payloadBytes = (payload: Payload) => (payload ? temporal.api.common.v1.Payload.encode(payload).finish().length : 0);
const payloadsBytes = (payloads: Payloads) => (payloads ? temporal.api.common.v1.Payloads.encode(payloads).finish().length : 0);
const mapBytes = (fields: Record<string, IPayload> | null | undefined) =>
  Object.entries(fields ?? {}).reduce((sum, [key, value]) => sum + key.length + payloadBytes(value), 0);

export interface HistoryBytes {
  events: number;
  /** the whole history, protobuf-encoded */
  total: number;
  /** the workflow's argument (PipelineRunInput for the engine) */
  workflowInput: number;
  memo: number;
  searchAttributes: number;
  /** staticSummary / staticDetails of the run and each activity's summary */
  userMetadata: number;
  /** every activity's input, summed */
  activityInput: number;
  /** every activity's result, summed */
  activityResult: number;
  /** bytes of each event type, summed */
  byEventType: Record<string, number>;
}

export function historyBytes(history: types.temporal.api.history.v1.IHistory): HistoryBytes {
  const out: HistoryBytes = {
    events: history.events?.length ?? 0,
    total: temporal.api.history.v1.History.encode(history).finish().length,
    workflowInput: 0,
    memo: 0,
    searchAttributes: 0,
    userMetadata: 0,
    activityInput: 0,
    activityResult: 0,
    byEventType: {},
  };
  for (const event of history.events ?? []) {
    const type = temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType);
    out.byEventType[type] = (out.byEventType[type] ?? 0) + temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    if (event.userMetadata) out.userMetadata += temporal.api.sdk.v1.UserMetadata.encode(event.userMetadata).finish().length;
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      out.workflowInput += payloadsBytes(started.input);
      out.memo += mapBytes(started.memo?.fields as Record<string, IPayload>);
      out.searchAttributes += mapBytes(started.searchAttributes?.indexedFields as Record<string, IPayload>);
    }
    const upserted = event.upsertWorkflowSearchAttributesEventAttributes;
    if (upserted) out.searchAttributes += mapBytes(upserted.searchAttributes?.indexedFields as Record<string, IPayload>);
    out.activityInput += payloadsBytes(event.activityTaskScheduledEventAttributes?.input);
    out.activityResult += payloadsBytes(event.activityTaskCompletedEventAttributes?.result);
  }
  return out;
}
