/** The TransitionWorker gRPC service definition, loaded once from proto/transition_worker.proto. */
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { packagePath } from '../paths';

const PROTO_PATH = packagePath('proto', 'transition_worker.proto');

const definition = loadSync(PROTO_PATH, { keepCase: true, defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;

export const TransitionWorkerService: grpc.ServiceDefinition = loaded.pipeline.transition.v1.TransitionWorker.service;
export const TransitionWorkerClient: grpc.ServiceClientConstructor = loaded.pipeline.transition.v1.TransitionWorker;
