/** The TransitionWorker gRPC service, loaded once from the proto the package ships (proto/transition_worker.proto). */
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

// src/ and dist/ both sit one level under the package root.
const PROTO_PATH = fileURLToPath(new URL('../proto/transition_worker.proto', import.meta.url));

const definition = loadSync(PROTO_PATH, { keepCase: true, defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;

export const TransitionWorkerService: grpc.ServiceDefinition = loaded.pipeline.transition.v1.TransitionWorker.service;
