/**
 * A plain SQS queue URL as AWS and the emulators print it: `https://sqs.<region>.amazonaws.com/<account>/<name>`
 * (also `.amazonaws.com.cn`, and the legacy `https://<region>.queue.amazonaws.com/…`), or an emulator's
 * `http://127.0.0.1:4566/<account>/<name>`. The account is 12 digits (an AWS account id; fauxqs uses
 * 000000000000, local-aws-sqs 123456789012) and the name is an SQS queue name (1–80 of A–Z a–z 0–9 - _,
 * plus `.fifo`): that path shape is what makes such a URL unambiguous — no other broker's connection
 * or queue is written this way.
 *
 * fauxqs names its queues `http://sqs.<region>.127.0.0.1:4566/<account>/<name>` (what `ListQueues`,
 * `GetQueueUrl` and `queuescope queues --json` print). The WHATWG URL parser rejects that host (its last
 * label is a number, so the whole host must be an IPv4 address), and the name does not resolve: such a
 * URL is read with its region from the host and the IPv4 address as the endpoint (`http://127.0.0.1:4566`).
 */
export interface SqsQueueUrl {
  /** The URL as given (trimmed). */
  url: string;
  /** `scheme://host[:port]`, the endpoint requests go to (for `sqs.<region>.<IPv4>` hosts: the IPv4 address). */
  origin: string;
  /** The region an AWS host names (or an emulator's `sqs.<region>.<IPv4>` host); null for any other host. */
  region: string | null;
  /** True for an AWS host (`*.amazonaws.com`, `*.amazonaws.com.cn`). */
  aws: boolean;
  accountId: string;
  name: string;
}

const PATH = /^\/(\d{12})\/([A-Za-z0-9_-]{1,75}(?:\.fifo)?|[A-Za-z0-9_-]{1,80})\/?$/;

const REGION = '[a-z]{2}(?:-gov)?-[a-z]+-\\d';
const AWS_HOST = new RegExp(`^(?:sqs\\.(${REGION})|(${REGION})\\.queue|queue)\\.amazonaws\\.com(?:\\.cn)?$`);
/** fauxqs: `http://sqs.<region>.<IPv4>[:port]/…` (a host the URL parser refuses, see {@link SqsQueueUrl}). */
const REGION_IPV4_URL = new RegExp(`^(https?):\\/\\/sqs\\.(${REGION})\\.((?:\\d{1,3}\\.){3}\\d{1,3})(:\\d{1,5})?(\\/[^?#]*)$`, 'i');

/** Parses a plain SQS queue URL (see {@link SqsQueueUrl}); null when `text` is not one. Pure. */
export function parseSqsQueueUrl(text: string): SqsQueueUrl | null {
  const raw = text.trim();
  if (!/^https?:\/\//i.test(raw)) return null;
  const regionIp = REGION_IPV4_URL.exec(raw);
  if (regionIp !== null) {
    const [, scheme = '', region = '', ip = '', port = '', path = ''] = regionIp;
    const m = PATH.exec(path);
    let origin: string;
    try {
      origin = new URL(`${scheme.toLowerCase()}://${ip}${port}`).origin;
    } catch {
      return null;
    }
    if (m === null) return null;
    return { url: raw, origin, region: region.toLowerCase(), aws: false, accountId: m[1] ?? '', name: m[2] ?? '' };
  }
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

const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Whether a plain queue URL names another server than the connection it is used with: the URL is
 * resolved on the connection by its name and account (GetQueueUrl), so without this check
 * `redrive sqs://us-east-1 https://sqs.eu-west-1.amazonaws.com/…/orders-dlq` would read — and move —
 * us-east-1's queue of the same name. An AWS URL must match the connection's region (and an AWS
 * endpoint: `*.amazonaws.com`, VPC endpoints included); another URL must have the endpoint's scheme,
 * host and port (localhost, 127.x.x.x and [::1] count as one host). Pure.
 * @param endpoint the connection's endpoint URL (for AWS `https://sqs.<region>.amazonaws.com`).
 * @param region the connection's region.
 * @returns why they differ, in words; null when they match or the endpoint cannot be parsed.
 */
export function sqsQueueUrlMismatch(url: SqsQueueUrl, endpoint: string, region: string): string | null {
  let e: URL;
  try {
    e = new URL(endpoint);
  } catch {
    return null;
  }
  const endpointAws = /\.amazonaws\.com(?:\.cn)?$/i.test(e.hostname);
  if (url.aws) {
    if (!endpointAws) return `it is an AWS queue URL (region ${url.region ?? '?'}), but the connection goes to ${e.origin}`;
    if (url.region !== region) return `it names region ${url.region ?? '?'}, but the connection is to region ${region}`;
    return null;
  }
  if (endpointAws) return `it names the server ${url.origin}, but the connection goes to AWS (${e.origin})`;
  let u: URL;
  try {
    u = new URL(url.origin);
  } catch {
    return null;
  }
  const host = (h: string): string => (LOOPBACK.test(h) ? 'loopback' : h.toLowerCase());
  if (u.protocol !== e.protocol || host(u.hostname) !== host(e.hostname) || u.port !== e.port) return `it names the server ${url.origin}, but the connection goes to ${e.origin}`;
  return null;
}
