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
import { Connection } from '@temporalio/client';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import type { ConfigDataSource } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError } from '../errors';
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

/** Turns a connection failure into a start-up error that names the setting to check. */
export function explainConnectFailure(err: unknown, options: TemporalConnectOptions): Error {
  const message = err instanceof Error ? err.message : String(err);
  const where = `cannot connect to Temporal at ${options.address}`;
  const tls = typeof options.tls === 'object' ? options.tls : undefined;
  if (options.tls && /certificate|UnknownIssuer|unknown ca|self.signed|verify|BadSignature/i.test(message) && !/certificate required/i.test(message)) {
    return new ConfigError(`${SETTING.serverCa}: ${where}: the server's certificate does not verify against the configured CA${tls?.serverNameOverride ? ` for the name ${tls.serverNameOverride}` : ''} (${SETTING.serverName} if the name differs) — ${message}`);
  }
  if (options.tls && !tls?.clientCertPair && /certificate required|handshake|alert|reset|closed|tls/i.test(message)) {
    return new ConfigError(`${SETTING.clientCert} and ${SETTING.clientKey}: ${where}: the TLS handshake failed and no client certificate is configured; a server that requires mTLS needs one — ${message}`);
  }
  if (options.tls && tls?.clientCertPair && /certificate required|bad certificate|unknown ca|alert|handshake/i.test(message)) {
    return new ConfigError(`${SETTING.clientCert}: ${where}: the server refused the client certificate — ${message}`);
  }
  if (/unauthenticated|permission|api key|PermissionDenied|Unauthenticated/i.test(message)) {
    return new ConfigError(`${options.apiKey ? SETTING.apiKey : `${SETTING.apiKey} or ${SETTING.clientCert}`}: ${where}: the server refused the credentials — ${message}`);
  }
  return new Error(`${where}: ${message}`);
}

/** A client connection; failures name the setting. */
export async function connectClient(options: TemporalConnectOptions): Promise<Connection> {
  try {
    return await Connection.connect({ address: options.address, tls: options.tls, apiKey: options.apiKey, metadata: options.metadata });
  } catch (err) {
    throw explainConnectFailure(err, options);
  }
}

/** A worker connection; failures name the setting. */
export async function connectNative(options: TemporalConnectOptions): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ address: options.address, tls: options.tls, apiKey: options.apiKey, metadata: options.metadata });
  } catch (err) {
    throw explainConnectFailure(err, options);
  }
}
