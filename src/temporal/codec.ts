/**
 * Encrypted payloads (opt-in, `pipeline.codec.keys`): a PayloadCodec that seals every
 * payload the client and the worker send to Temporal with AES-256-GCM, so histories and
 * the Temporal UI hold ciphertext. The whole Payload (metadata + data) is serialised and
 * sealed; the sealed payload says only `encoding: binary/encrypted` and the key id.
 *
 * Keys rotate by prepending: the first key encrypts, every listed key decrypts, so
 * histories written under an older key stay readable while it is listed.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
// A default import: @temporalio/proto is CommonJS whose names Node's ESM loader cannot see (tsx, npm start).
import proto from '@temporalio/proto';
import type { CodecKey } from '../config/config';

const { temporal } = proto;

export const ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A payload the codec cannot open: an unknown key id, or ciphertext that fails authentication. */
export class CodecError extends Error {
  constructor(
    message: string,
    readonly keyId?: string,
  ) {
    super(message);
    this.name = 'CodecError';
  }
}

const utf8 = (text: string) => new TextEncoder().encode(text);

export class AesGcmCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;
  private readonly current: { id: string; key: Buffer };

  /** `keys[0]` encrypts; all of them decrypt. */
  constructor(keys: CodecKey[]) {
    if (keys.length === 0) throw new Error('AesGcmCodec needs at least one key');
    this.keys = new Map(keys.map((entry) => [entry.id, Buffer.from(entry.key, 'base64')]));
    this.current = { id: keys[0].id, key: this.keys.get(keys[0].id)! };
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: utf8(ENCODING), [KEY_ID_METADATA]: utf8(this.current.id) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || Buffer.from(encoding).toString('utf8') !== ENCODING) return payload;
      const idBytes = payload.metadata?.[KEY_ID_METADATA];
      const keyId = idBytes ? Buffer.from(idBytes).toString('utf8') : '';
      const key = this.keys.get(keyId);
      if (!key) throw new CodecError(`payload sealed with key id "${keyId}", which is not in pipeline.codec.keys`, keyId);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new CodecError('sealed payload is too short', keyId);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
        return temporal.api.common.v1.Payload.decode(plain) as Payload;
      } catch {
        throw new CodecError(`sealed payload does not authenticate under key id "${keyId}"`, keyId);
      }
    });
  }
}
