/**
 * mTLS to Temporal, for real: the dev server has no TLS, so a TLS-terminating proxy
 * (node:tls, ALPN h2, client certificate required, verified against the test's CA) sits in
 * front of it. Certificates are made here with the openssl CLI. The service is configured
 * only through the temporal CLI's variables (TEMPORAL_TLS_*) and connects with
 * verification on, client and worker both; an execution runs through the proxy. An API key
 * (Temporal Cloud) is sent on every call through a gRPC gateway that checks it. A wrong
 * CA, a missing client certificate, a certificate without its key and an unreadable file
 * are start-up errors naming the variable.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  connect as h2Connect,
  constants as h2,
  createSecureServer,
  type ClientHttp2Session,
  type Http2SecureServer,
  type IncomingHttpHeaders,
} from 'node:http2';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/errors';
import { createLog } from '../../src/log';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startService, type Service } from '../../src/runtime';
import { TEST_TOKENS } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { until } from '../helpers/until';

const dir = mkdtempSync(join(tmpdir(), 'temporal-tls-'));
const file = (name: string) => join(dir, name);
const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA, and certificates it signs: server (localhost, 127.0.0.1) and client. A second, unrelated CA. */
function makeCertificates(): void {
  for (const ca of ['ca', 'other-ca']) {
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=test ${ca}`, '-keyout', file(`${ca}.key`), '-out', file(`${ca}.pem`));
  }
  const sign = (name: string, subject: string) => {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`));
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      file(`${name}.pem`),
      '-extfile',
      file(`${name}.ext`),
    );
  };
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  sign('server', '/CN=localhost');
  sign('client', '/CN=pipeline-worker');
}

let proxy: Server;
let proxyAddress: string;
/** The API-key gateway: a gRPC (HTTP/2) proxy that answers UNAUTHENTICATED unless `authorization: Bearer <API_KEY>`. */
let gateway: Http2SecureServer;
let gatewayAddress: string;
const API_KEY = 'test-api-key-7d1f';
const authorizations: (string | undefined)[] = [];
let database: TestDatabase;
const clientCertificates: (string | undefined)[] = [];
const services: Service[] = [];

beforeAll(async () => {
  makeCertificates();
  const [upstreamHost, upstreamPort] = inject('temporalAddress').split(':');
  proxy = createServer(
    {
      key: readFileSync(file('server.key')),
      cert: readFileSync(file('server.pem')),
      ca: readFileSync(file('ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket: TLSSocket) => {
      clientCertificates.push(String(socket.getPeerCertificate()?.subject?.CN));
      const upstream = netConnect(Number(upstreamPort), upstreamHost);
      socket.pipe(upstream).pipe(socket);
      const close = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on('error', close);
      upstream.on('error', close);
    },
  );
  proxy.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyAddress = `localhost:${(proxy.address() as AddressInfo).port}`;

  // Temporal's frontend ends every connection with a GOAWAY (2 min idle, 5 min of age), as
  // any gRPC server may: a session that was told to go away or has closed is replaced by a
  // new one, as a real gateway does, never reused (a request on it throws).
  let upstream: ClientHttp2Session | undefined;
  const upstreamSession = () => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      const session = h2Connect(`http://${inject('temporalAddress')}`);
      session.on('error', () => undefined);
      session.on('goaway', () => {
        if (upstream === session) upstream = undefined;
      });
      upstream = session;
    }
    return upstream;
  };
  gateway = createSecureServer({ key: readFileSync(file('server.key')), cert: readFileSync(file('server.pem')), ALPNProtocols: ['h2'] });
  gateway.on('stream', (stream, headers: IncomingHttpHeaders) => {
    const authorization = headers.authorization;
    authorizations.push(authorization);
    stream.on('error', () => undefined);
    if (authorization !== `Bearer ${API_KEY}`) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'invalid API key' }, { endStream: true });
      return;
    }
    const forwarded: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined && !name.startsWith(':') && name !== 'connection') forwarded[name] = value;
    }
    const request = upstreamSession().request({ [h2.HTTP2_HEADER_METHOD]: headers[':method']!, [h2.HTTP2_HEADER_PATH]: headers[':path']!, ...forwarded });
    request.on('error', () => stream.close(h2.NGHTTP2_INTERNAL_ERROR));
    let trailers: Record<string, string | string[]> = {};
    // Either side may go away mid-call (a service stopping cancels its long polls).
    const quietly = (fn: () => void) => {
      try {
        if (!stream.destroyed && !stream.closed) fn();
      } catch {
        // the client already left
      }
    };
    request.on('response', (responseHeaders, flags) => {
      const trailersOnly = (flags & h2.NGHTTP2_FLAG_END_STREAM) !== 0;
      quietly(() => stream.respond(responseHeaders, trailersOnly ? { endStream: true } : { waitForTrailers: true }));
    });
    request.on('trailers', (received) => (trailers = received as Record<string, string | string[]>));
    stream.on('wantTrailers', () => quietly(() => stream.sendTrailers(trailers)));
    stream.on('close', () => request.close());
    stream.pipe(request);
    request.pipe(stream);
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  gatewayAddress = `localhost:${(gateway.address() as AddressInfo).port}`;
  database = await createTestDatabase();
});

afterAll(async () => {
  for (const service of services) await service.stop();
  proxy?.close();
  gateway?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const quiet = createLog({ level: 'fatal', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
const pipeline = definePipeline({ name: 'tls', steps: [localStep('one', (input: { n: number }) => ({ n: input.n + 1 }))] });

function start(env: Record<string, string>, address = proxyAddress): Promise<Service> {
  const config = loadConfig(
    {},
    {
      'pipeline.store.url': database.url,
      'pipeline.temporal.address': address,
      'pipeline.temporal.task-queue': `tls-${Date.now()}`,
      'pipeline.auth.tokens': TEST_TOKENS,
      'pipeline.sweeper.interval': '500ms',
    },
  );
  return startService({ config, log: quiet, pipelines: [pipeline], http: false, env });
}

const MTLS = () => ({
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
  TEMPORAL_TLS_CLIENT_CERT_PATH: file('client.pem'),
  TEMPORAL_TLS_CLIENT_KEY_PATH: file('client.key'),
});

describe('Temporal over mTLS (TEMPORAL_TLS_* variables)', () => {
  it('connects client and worker with verification on, and runs an execution through the proxy', async () => {
    const service = await start(MTLS());
    services.push(service);
    expect((await service.readiness.check()).checks).toEqual({ postgres: 'up', temporal: 'up', worker: 'up' });

    const res = await service.app.request('/pipeline/api/tenants/acme/executions', {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      body: JSON.stringify({ pipeline: 'tls', executionId: 'tls-1', input: { n: 41 } }),
    });
    expect(res.status).toBe(202);
    await until(async () => (await service.store.get('acme', 'tls-1'))?.status === 'SUCCEEDED', 60_000, 'the execution to succeed through the TLS proxy');
    // Every connection the proxy accepted presented the client certificate.
    expect(clientCertificates.length).toBeGreaterThanOrEqual(2);
    expect(new Set(clientCertificates)).toEqual(new Set(['pipeline-worker']));
  });

  it('refuses to start with a CA that did not sign the server certificate, naming the variable', async () => {
    const error = await start({ ...MTLS(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('other-ca.pem') }).catch((err) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/^TEMPORAL_TLS_SERVER_CA_CERT_PATH/);
  });

  it('refuses to start without a client certificate when the server requires one, naming the variables', async () => {
    const error = await start({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem') }).catch((err) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/^TEMPORAL_TLS_CLIENT_CERT_PATH .* and TEMPORAL_TLS_CLIENT_KEY_PATH/);
  });

  it('connects from a temporal CLI TOML profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE) as well as from the variables', async () => {
    const toml = file('temporal.toml');
    writeFileSync(
      toml,
      [
        '[profile.prod]',
        `address = "${proxyAddress}"`,
        '[profile.prod.tls]',
        `server_ca_cert_path = "${file('ca.pem')}"`,
        `client_cert_path = "${file('client.pem')}"`,
        `client_key_path = "${file('client.key')}"`,
        '',
      ].join('\n'),
    );
    const before = clientCertificates.length;
    const service = await start({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' });
    services.push(service);
    expect((await service.readiness.check()).checks).toEqual({ postgres: 'up', temporal: 'up', worker: 'up' });
    expect(clientCertificates.slice(before)).toContain('pipeline-worker');
  });

  it('names the variable of a certificate without its key, and of an unreadable file', async () => {
    const { TEMPORAL_TLS_CLIENT_KEY_PATH: _key, ...withoutKey } = MTLS();
    await expect(start(withoutKey)).rejects.toThrow(/^TEMPORAL_TLS_CLIENT_KEY_PATH .* is missing/);
    await expect(start({ ...MTLS(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('absent.pem') })).rejects.toThrow(
      /^TEMPORAL_TLS_SERVER_CA_CERT_PATH .*cannot read .*absent\.pem: ENOENT/,
    );
  });

  it('sends TEMPORAL_API_KEY on every call, client and worker, over TLS (Temporal Cloud); a refused key names the variable', async () => {
    const service = await start({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem') }, gatewayAddress);
    services.push(service);
    const res = await service.app.request('/pipeline/api/tenants/acme/executions', {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      body: JSON.stringify({ pipeline: 'tls', executionId: 'api-key-1', input: { n: 1 } }),
    });
    expect(res.status).toBe(202);
    await until(
      async () => (await service.store.get('acme', 'api-key-1'))?.status === 'SUCCEEDED',
      60_000,
      'the execution to succeed through the API-key gateway',
    );
    expect(authorizations.length).toBeGreaterThan(3);
    expect(new Set(authorizations)).toEqual(new Set([`Bearer ${API_KEY}`]));

    const refused = await start({ TEMPORAL_API_KEY: 'wrong-key', TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem') }, gatewayAddress).catch((err) => err);
    expect(refused).toBeInstanceOf(ConfigError);
    expect(refused.message).toMatch(/^TEMPORAL_API_KEY .*refused the credentials/);
  });
});
