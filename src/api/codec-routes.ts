/**
 * The codec endpoint the Temporal UI (and `temporal --codec-endpoint`) calls to show
 * sealed payloads to an authorised engineer: `POST /codec/decode` and `POST /codec/encode`,
 * Temporal's codec-server contract: a JSON body `{ "payloads": [{ "metadata": { k: base64 },
 * "data": base64 }] }` answered in the same shape. Admin tokens without a tenant allow-list
 * only (a payload names no tenant the token could be checked against). CORS answers the
 * configured UI origins only, preflight included.
 */
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { Payload } from '@temporalio/common';
import { z } from 'zod';
import type { TokenConfig } from '../config/config';
import { ForbiddenError, PipelineError } from '../errors';
import type { Log } from '../log';
import { CodecError, type AesGcmCodec } from '../temporal/codec';
import { bearerAuth, type AuthEnv } from './middleware/bearer-auth';
import { bodyLimits } from './middleware/body-limits';
import { CodecRequest, MAX_CODEC_BODY_BYTES } from '../contract/requests';
import { mount } from './mount';

export { MAX_CODEC_BODY_BYTES };
type JsonPayload = z.infer<typeof CodecRequest>['payloads'][number];

function fromJson(payload: JsonPayload): Payload {
  const metadata = Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, new Uint8Array(Buffer.from(value, 'base64'))]));
  return { metadata, data: new Uint8Array(Buffer.from(payload.data ?? '', 'base64')) };
}

function toJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  const metadata = Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value ?? new Uint8Array()).toString('base64')]),
  );
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

export interface CodecRoutesDeps {
  codec: AesGcmCodec;
  tokens: TokenConfig[];
  origins: string[];
  bodyReadTimeoutMs: number;
  log: Log;
}

export function codecRoutes(deps: CodecRoutesDeps) {
  const routes = new Hono<AuthEnv>();
  // Preflights carry no token: CORS answers them before authentication.
  routes.use(
    '*',
    cors({
      origin: deps.origins,
      allowMethods: ['POST', 'OPTIONS'],
      allowHeaders: ['Authorization', 'Content-Type', 'X-Namespace'],
      credentials: true,
      maxAge: 600,
    }),
  );
  routes.use(
    '*',
    bearerAuth({ tokens: deps.tokens, role: 'admin', log: deps.log }),
    async (c, next) => {
      if (c.get('principal').tenants) throw new ForbiddenError('the codec endpoint needs an admin token without a tenant allow-list');
      await next();
    },
    bodyLimits({ maxBytes: MAX_CODEC_BODY_BYTES, readTimeoutMs: deps.bodyReadTimeoutMs }),
  );

  for (const direction of ['encode', 'decode'] as const) {
    mount(
      routes,
      `POST /codec/${direction}`,
      async (c, { body }, answer) => {
        let payloads: Payload[];
        try {
          payloads = await deps.codec[direction](body.payloads.map(fromJson));
        } catch (err) {
          if (err instanceof CodecError) throw new PipelineError(err.message, 'CODEC_PAYLOAD_UNREADABLE', err.keyId ? { keyId: err.keyId } : {});
          throw err;
        }
        deps.log.info({ event: 'codec_request', direction, payloads: payloads.length, principal: c.get('principal').name });
        return answer(200, { payloads: payloads.map(toJson) });
      },
      { base: '/codec', maxBytes: MAX_CODEC_BODY_BYTES },
    );
  }
  return routes;
}
