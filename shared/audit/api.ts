/** API input schemas of the audit methods (`audit.run`, `audit.fix.preview`, `audit.fix.apply`). */
import { z } from 'zod';

const id = z.string().min(1).max(512);
const name = z.string().min(1).max(1024);

/** A one-click fix as the renderer sends it back (see `AuditFix` in types.ts). */
export const auditFixSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('sqs.set-redrive-policy'),
      queueId: z.string().min(1).max(2048),
      queueName: name,
      // Not z.url(): emulators use hosts like sqs.us-east-1.127.0.0.1 that WHATWG-strict checks refuse.
      queueUrl: z.string().min(1).max(2048).regex(/^https?:\/\//i, 'an http(s) queue URL'),
      deadLetterTargetArn: z.string().min(1).max(2048),
      deadLetterQueueName: name,
      maxReceiveCount: z.number().int().min(1).max(1000),
    })
    .strict(),
  z
    .object({
      kind: z.literal('rabbitmq.add-dlx-policy'),
      queueId: z.string().min(1).max(2048),
      vhost: z.string().max(1024),
      queueName: name,
      policyName: z.string().min(1).max(255),
      deadLetterExchange: z.string().max(255),
      deadLetterRoutingKey: z.string().max(255).nullable(),
      deadLetterQueue: name,
    })
    .strict(),
]);

export const auditRunInputSchema = z.object({ connectionId: id, pattern: z.string().trim().min(1).max(512).optional() }).strict();
export const auditFixInputSchema = z.object({ connectionId: id, fix: auditFixSchema }).strict();
