/** The TransitionWorker gRPC service definition, loaded once from proto/transition_worker.proto. */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const PROTO_PATH = fileURLToPath(new URL('../../proto/transition_worker.proto', import.meta.url));

const definition = loadSync(PROTO_PATH, { keepCase: true, defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;

export const TransitionWorkerService: grpc.ServiceDefinition = loaded.pipeline.transition.v1.TransitionWorker.service;
export const TransitionWorkerClient: grpc.ServiceClientConstructor = loaded.pipeline.transition.v1.TransitionWorker;
