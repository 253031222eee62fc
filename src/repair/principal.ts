/** Who is calling, as the bearer middleware found it, and what a repair may do with that. Pure: no I/O. */
import type { TokenRole } from '../config/config';

export interface Principal {
  name: string;
  role: TokenRole;
  tenants?: string[];
  /** may see payload values in a repair's answers (TokenConfig.readPayloads) */
  readPayloads?: boolean;
}

/** Tokens that may correct an input (a re-drive's inputPatch or input, a fork): admin and repair, never submit. */
export const mayRepair = (principal: Principal) => principal.role === 'admin' || principal.role === 'repair';
