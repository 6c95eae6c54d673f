import { execFileSync } from 'node:child_process';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT } from './env';

async function up(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}

/**
 * Integration tests need Redis, RabbitMQ (+management) and the SQS emulators. `npm test`
 * must work right after `npm ci`, so when an emulator is down this runs `scripts/services.sh`
 * (idempotent; it leaves running services alone).
 */
export default async function setup(): Promise<void> {
  if ((await up(`${SQS_ENDPOINT}/health`)) && (await up(SQS_ALT_ENDPOINT))) return;
  execFileSync('bash', ['scripts/services.sh'], { stdio: 'inherit' });
}
