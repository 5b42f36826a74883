/**
 * A URL with its password (and user) hidden, for messages: everything up to the last "@" (a
 * password may hold "@" or "/" unencoded), and ioredis's `?password=` query parameter.
 */
export function redact(url: string): string {
  return url.replace(/\/\/.*@/s, '//***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}
