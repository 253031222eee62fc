/**
 * The TransitionWorker gRPC service definition, loaded once from the worker kit's proto
 * (`@pipeline-orchestrator/worker-kit/proto/transition_worker.proto`): the wire protocol has
 * one home, the package a remote team installs.
 */
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export const PROTO_PATH = createRequire(import.meta.url).resolve('@pipeline-orchestrator/worker-kit/proto/transition_worker.proto');

const definition = loadSync(PROTO_PATH, { keepCase: true, defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;

export const TransitionWorkerService: grpc.ServiceDefinition = loaded.pipeline.transition.v1.TransitionWorker.service;
export const TransitionWorkerClient: grpc.ServiceClientConstructor = loaded.pipeline.transition.v1.TransitionWorker;
