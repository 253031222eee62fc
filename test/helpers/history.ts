/**
 * Reads a history JSON file (the format `temporal workflow show --output json` writes) into
 * the History message the worker's replay API takes.
 *
 * Why not `historyFromJSON` from @temporalio/common: in this install @temporalio/common and
 * @temporalio/proto each carry their own copy of protobufjs 8, and protobufjs's JSON reader
 * rejects a message type made by the other copy ("type must be a Type"). Reading with the
 * copy that made the types avoids that. The CLI already writes full enum names, so the
 * older-format fix-ups historyFromJSON does are not needed.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

type History = proto.temporal.api.history.v1.History;

const require = createRequire(import.meta.url);
const requireFromProto = createRequire(require.resolve('@temporalio/proto'));
const { fromJson } = requireFromProto('protobufjs/ext/protojson') as { fromJson(type: unknown, json: unknown, options?: object): History | null };
// The CommonJS root itself (an ESM namespace import is a copy patchProtobufRoot cannot walk).
const historyType = (patchProtobufRoot(require('@temporalio/proto')) as unknown as { lookupType(name: string): unknown }).lookupType(
  'temporal.api.history.v1.History',
);

export function readHistory(file: string): History {
  const json = JSON.parse(readFileSync(file, 'utf8')) as { events?: unknown };
  if (!Array.isArray(json.events)) throw new TypeError(`${file}: not a history (no events array)`);
  const history = fromJson(historyType, json, { ignoreUnknownFields: true });
  if (!history) throw new TypeError(`${file}: not a history`);
  return history;
}
