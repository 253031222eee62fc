/**
 * The `temporal` CLI's client profile (`@temporalio/envconfig`): a TOML file
 * (`TEMPORAL_CONFIG_FILE`, default ~/.config/temporalio/temporal.toml; `TEMPORAL_PROFILE`)
 * overridden by `TEMPORAL_*` variables. Light on purpose: configuration loading reads the
 * profile's address and namespace without loading the Temporal SDK's native parts.
 */
import { loadClientConfigProfile, type ClientConfigProfile } from '@temporalio/envconfig';
import { ConfigError } from '../errors';

/** The setting names a failure points at: the variable, and the profile key beside it. */
export const SETTING = {
  profile: 'TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE',
  serverCa: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH (profile tls.server_ca_cert_path)',
  clientCert: 'TEMPORAL_TLS_CLIENT_CERT_PATH (profile tls.client_cert_path)',
  clientKey: 'TEMPORAL_TLS_CLIENT_KEY_PATH (profile tls.client_key_path)',
  serverName: 'TEMPORAL_TLS_SERVER_NAME (profile tls.server_name)',
  apiKey: 'TEMPORAL_API_KEY (profile api_key)',
} as const;

/** The temporal CLI's profile for this environment; an unreadable file or profile is a ConfigError. */
export function temporalProfile(env: Record<string, string | undefined>): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ overrideEnvVars: definedOnly(env) });
  } catch (err) {
    throw new ConfigError(`${SETTING.profile}: cannot load the Temporal client profile: ${err instanceof Error ? err.message : err}`);
  }
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
