/**
 * A plain SQS queue URL as AWS and the emulators print it: `https://sqs.<region>.amazonaws.com/<account>/<name>`
 * (also `.amazonaws.com.cn`, and the legacy `https://<region>.queue.amazonaws.com/…`), or an emulator's
 * `http://127.0.0.1:4566/<account>/<name>`. The account is 12 digits (an AWS account id; fauxqs uses
 * 000000000000, local-aws-sqs 123456789012) and the name is an SQS queue name (1–80 of A–Z a–z 0–9 - _,
 * plus `.fifo`): that path shape is what makes such a URL unambiguous — no other broker's connection
 * or queue is written this way.
 */
export interface SqsQueueUrl {
  /** The URL as given (trimmed). */
  url: string;
  /** `scheme://host[:port]`, the endpoint requests go to. */
  origin: string;
  /** The region an AWS host names; null for any other host (an emulator). */
  region: string | null;
  /** True for an AWS host (`*.amazonaws.com`, `*.amazonaws.com.cn`). */
  aws: boolean;
  accountId: string;
  name: string;
}

const PATH = /^\/(\d{12})\/([A-Za-z0-9_-]{1,75}(?:\.fifo)?|[A-Za-z0-9_-]{1,80})\/?$/;
const AWS_HOST = /^(?:sqs\.([a-z]{2}(?:-gov)?-[a-z]+-\d)|([a-z]{2}(?:-gov)?-[a-z]+-\d)\.queue|queue)\.amazonaws\.com(?:\.cn)?$/;

/** Parses a plain SQS queue URL (see {@link SqsQueueUrl}); null when `text` is not one. Pure. */
export function parseSqsQueueUrl(text: string): SqsQueueUrl | null {
  const raw = text.trim();
  if (!/^https?:\/\//i.test(raw)) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '') return null;
  const m = PATH.exec(u.pathname);
  if (m === null) return null;
  const host = AWS_HOST.exec(u.hostname.toLowerCase());
  const aws = host !== null;
  if (aws && u.protocol !== 'https:') return null;
  const region = host === null ? null : (host[1] ?? host[2] ?? 'us-east-1');
  return { url: raw, origin: u.origin, region, aws, accountId: m[1] ?? '', name: m[2] ?? '' };
}
