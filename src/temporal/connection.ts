/**
 * The Temporal connection, configured the way the `temporal` CLI is: a TOML profile
 * (`TEMPORAL_CONFIG_FILE`, `TEMPORAL_PROFILE`) overridden by `TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` (read by `@temporalio/envconfig`).
 * The service's own `pipeline.temporal.address` / `.namespace` win over the profile.
 *
 * Every failure that a setting causes (an unreadable file, a certificate the server does not
 * accept, a CA that does not verify the server) is a ConfigError naming the setting.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Interceptor } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import type { ConfigDataSource } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { causeChain, ConfigError, errorMessage } from '../errors';
import type { Log } from '../log';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { SETTING, temporalProfile } from './profile';

/** What both the client (`Connection`) and the worker (`NativeConnection`) connect with. */
export interface TemporalConnectOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

function readSource(source: ConfigDataSource | undefined, setting: string): Buffer | undefined {
  if (!source) return undefined;
  if ('data' in source) return Buffer.from(source.data);
  try {
    return readFileSync(source.path);
  } catch (err) {
    throw new ConfigError(`${setting}: cannot read ${source.path}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
}

/** Connection options for `address` from the environment's profile (TLS files read here). */
export function temporalConnectOptions(address: string, env: Record<string, string | undefined>): TemporalConnectOptions {
  const profile = temporalProfile(env);
  const options: TemporalConnectOptions = { address, apiKey: profile.apiKey || undefined, metadata: profile.grpcMeta };
  const tls = profile.tls;
  if (tls?.disabled) {
    options.tls = false;
  } else if (tls) {
    const crt = readSource(tls.clientCert, SETTING.clientCert);
    const key = readSource(tls.clientKey, SETTING.clientKey);
    if (Boolean(crt) !== Boolean(key)) {
      throw new ConfigError(`${crt ? SETTING.clientKey : SETTING.clientCert} is missing: a client certificate needs both the certificate and its key`);
    }
    options.tls = {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: readSource(tls.serverCACert, SETTING.serverCa),
      clientCertPair: crt && key ? { crt, key } : undefined,
    };
  } else if (options.apiKey) {
    // An API key is only ever sent over TLS (Temporal Cloud); the system's CAs verify the server.
    options.tls = true;
  }
  return options;
}

/**
 * Why a TLS connection failed, in the setting's terms. The gRPC layers report only
 * "failed to connect before the deadline", so a plain node:tls handshake with the same
 * CA, client certificate and server name finds the reason: the server's certificate does
 * not verify (the CA or the name), or the server refuses us (no or a wrong client certificate).
 */
export async function diagnoseTls(options: TemporalConnectOptions, timeoutMs = 5000): Promise<ConfigError | undefined> {
  if (!options.tls) return undefined;
  const tls = typeof options.tls === 'object' ? options.tls : {};
  const { host, port } = splitAddress(options.address);
  const where = `cannot connect to Temporal at ${options.address} over TLS`;
  const outcome = await new Promise<{ stage: 'handshake' | 'after' | 'ok'; error?: NodeJS.ErrnoException }>((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      servername: tls.serverNameOverride ?? (isIP(host) ? undefined : host),
      ca: tls.serverRootCACertificate ? Buffer.from(tls.serverRootCACertificate) : undefined,
      cert: tls.clientCertPair ? Buffer.from(tls.clientCertPair.crt) : undefined,
      key: tls.clientCertPair ? Buffer.from(tls.clientCertPair.key) : undefined,
      ALPNProtocols: ['h2'],
      rejectUnauthorized: true,
    });
    let secured = false;
    const done = (result: { stage: 'handshake' | 'after' | 'ok'; error?: NodeJS.ErrnoException }) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    // TLS 1.3: the server judges our certificate after our handshake completes, so wait a moment for its alert.
    const timer = setTimeout(
      () => done({ stage: secured ? 'ok' : 'handshake', error: secured ? undefined : new Error('no TLS handshake in time') }),
      timeoutMs,
    );
    socket.once('secureConnect', () => {
      secured = true;
      setTimeout(() => done({ stage: 'ok' }), 500).unref();
    });
    socket.once('error', (error) => done({ stage: secured ? 'after' : 'handshake', error }));
    socket.once('close', () =>
      done({
        stage: secured ? 'after' : 'handshake',
        error: secured ? new Error('the server closed the connection after the handshake') : new Error('connection closed during the handshake'),
      }),
    );
  });
  const reason = outcome.error ? `${outcome.error.code ? `${outcome.error.code}: ` : ''}${outcome.error.message}` : '';
  const code = outcome.error?.code ?? '';
  if (outcome.stage === 'handshake' && /ALTNAME|HOSTNAME/.test(code)) {
    return new ConfigError(`${SETTING.serverName}: ${where}: the server's certificate is not for this name — ${reason}`);
  }
  if (outcome.stage === 'handshake' && /CERT|SELF_SIGNED|UNABLE_TO|VERIFY|ISSUER/.test(code)) {
    return new ConfigError(
      `${SETTING.serverCa}: ${where}: the server's certificate does not verify against ${tls.serverRootCACertificate ? 'the configured CA' : "the system's CAs (set the server's CA)"} — ${reason}`,
    );
  }
  if (outcome.stage === 'after' || /ALERT|CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA/.test(code)) {
    return tls.clientCertPair
      ? new ConfigError(`${SETTING.clientCert}: ${where}: the server refused the client certificate — ${reason}`)
      : new ConfigError(
          `${SETTING.clientCert} and ${SETTING.clientKey}: ${where}: the server requires a client certificate (mTLS) and none is configured — ${reason}`,
        );
  }
  return undefined;
}

function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  return match ? { host: match[1], port: Number(match[2]) } : { host: address, port: 7233 };
}

/** Turns a connection failure into a start-up error that names the setting to check. */
async function explainConnectFailure(err: unknown, options: TemporalConnectOptions): Promise<Error> {
  // The SDK wraps the gRPC error ("Failed to connect to Temporal server"): read the whole cause chain.
  const chain = causeChain(err);
  const codes = chain.map((at) => at.code);
  const message = chain.map((at) => at.message).join(': ');
  const diagnosed = await diagnoseTls(options).catch(() => undefined);
  if (diagnosed) return diagnosed;
  // gRPC 16 UNAUTHENTICATED, 7 PERMISSION_DENIED
  if (codes.includes(16) || codes.includes(7) || /unauthenticated|permission denied|api key/i.test(message)) {
    return new ConfigError(
      `${options.apiKey ? SETTING.apiKey : `${SETTING.apiKey} or ${SETTING.clientCert}`}: cannot connect to Temporal at ${options.address}: the server refused the credentials — ${message}`,
    );
  }
  return new Error(`cannot connect to Temporal at ${options.address}: ${message}`);
}

/**
 * Connects with `connect`; failures name the setting. A wrong TLS setting fails the handshake
 * at once, but the SDK reports it only at its 10 s connect deadline, so with TLS on, a handshake
 * of our own runs beside the connection and a definite diagnosis ends the wait early. A
 * connection that completes first wins.
 */
async function connectNamingSettings<C extends { close(): Promise<void> }>(connect: () => Promise<C>, options: TemporalConnectOptions): Promise<C> {
  const connecting = connect();
  if (options.tls) {
    const settled = connecting.then(
      () => undefined,
      () => undefined,
    );
    const early = await Promise.race([diagnoseTls(options).catch(() => undefined), settled]);
    if (early) {
      void connecting.then(
        (connection) => connection.close(),
        () => undefined,
      );
      throw early;
    }
  }
  try {
    return await connecting;
  } catch (err) {
    throw await explainConnectFailure(err, options);
  }
}

/**
 * The SDK's gRPC retry puts each retry of a call on a timer and does not look whether the
 * connection was closed meanwhile: a retry that fires after close throws "Channel has been
 * shut down" from the timer, an uncaught exception that ends the process (seen when the
 * service stops while Temporal does not answer). So once the client starts closing, no retry
 * is scheduled, and its close waits until every retry already scheduled has fired (at most the
 * SDK's 5 s retry interval, plus jitter).
 *
 * "Has fired" is counted where it happens, not guessed from time: `delayFunction` is called
 * exactly once for each retry the SDK puts on a timer, and that retry, when it fires, opens its
 * call through the `nextCall` this gate hands the SDK (every call after a call's first is a
 * retry). The count drops as the retry's call is opened, so close runs only after the last one
 * has its call: the channel's close then cancels that call, which settles because no retry is
 * scheduled once closing. Two earlier versions waited on a clock (a `Date.now()` deadline, then
 * a timer 1 ms longer than the retry's) and lost to the retry under load in CI: Node reads the
 * clock again for each timer it creates, so a timer created later can expire first.
 */
class RetryGate {
  private closing = false;
  private scheduled = 0;
  private drained?: () => void;
  private readonly defaults = defaultGrpcRetryOptions();

  interceptor(): Interceptor {
    const retrying = makeGrpcRetryInterceptor({
      retryableDecider: (attempt, status) => !this.closing && this.defaults.retryableDecider(attempt, status),
      delayFunction: (attempt, status) => {
        this.scheduled++;
        return this.defaults.delayFunction(attempt, status);
      },
    });
    return (options, nextCall) => {
      let opened = false;
      return retrying(options, (callOptions) => {
        if (!opened) {
          opened = true;
          return nextCall(callOptions);
        }
        try {
          return nextCall(callOptions);
        } finally {
          if (--this.scheduled === 0) this.drained?.();
        }
      });
    };
  }

  /** Resolves once no retry is scheduled. Called once per connection: `connectClient`'s close is memoised. */
  async drain(): Promise<void> {
    this.closing = true;
    if (this.scheduled > 0) await new Promise<void>((resolve) => (this.drained = resolve));
  }
}

/**
 * A client connection with the SDK's retry of transient failures (UNAVAILABLE and the like);
 * failures to connect name the setting. Its close lets pending retries settle first (see
 * RetryGate). `perAttempt` interceptors run under the retry, once for each call on the wire
 * (the bench counts Temporal round trips with one).
 */
export async function connectClient(options: TemporalConnectOptions, perAttempt: Interceptor[] = []): Promise<Connection> {
  const gate = new RetryGate();
  const connection = await connectNamingSettings(
    () =>
      Connection.connect({
        address: options.address,
        tls: options.tls,
        apiKey: options.apiKey,
        metadata: options.metadata,
        interceptors: [gate.interceptor(), ...perAttempt],
      }),
    options,
  );
  const close = connection.close.bind(connection);
  // One close for every caller: each waits for the same drain and the same channel close.
  let closing: Promise<void> | undefined;
  connection.close = () => (closing ??= gate.drain().then(close));
  return connection;
}

/** A worker connection; failures name the setting. */
export function connectNative(options: TemporalConnectOptions): Promise<NativeConnection> {
  return connectNamingSettings(
    () => NativeConnection.connect({ address: options.address, tls: options.tls, apiKey: options.apiKey, metadata: options.metadata }),
    options,
  );
}

/**
 * The engine's search attributes on the namespace (the service at start-up; the bench on a
 * Temporal of the caller's own). Answers why it failed (also logged), or undefined when they are
 * there: registered now, or already (the normal case after the first start).
 */
export async function registerSearchAttributes(connection: Connection, namespace: string, log: Log): Promise<string | undefined> {
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(ALL_SEARCH_ATTRIBUTES.map((key) => [key.name, 2 /* KEYWORD */])),
    });
    return undefined;
  } catch (err) {
    const message = errorMessage(err);
    if (/already exists/i.test(message)) return undefined;
    const error = message.slice(0, 200);
    log.warn({ event: 'search_attribute_registration_failed', error });
    return error;
  }
}
