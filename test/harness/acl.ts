import { command } from './resp.ts';

/**
 * Adds the ACL user `notrack` (password `secret`): every command but CLIENT TRACKING, as a managed
 * service that disables it would allow. What the notification canary must detect.
 */
export async function addUserWithoutTracking(port: number): Promise<void> {
  await command(port, [
    'ACL',
    'SETUSER',
    'notrack',
    'on',
    '>secret',
    '~*',
    '&*',
    '+@all',
    '-client|tracking',
  ]);
}
