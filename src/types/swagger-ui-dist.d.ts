/** swagger-ui-dist ships no types; we use one function of it. */
declare module 'swagger-ui-dist' {
  export function getAbsoluteFSPath(): string;
}
