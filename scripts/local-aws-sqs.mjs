// Starts the local-aws-sqs emulator (runs on Node 20) on 127.0.0.1:$PORT (default 4577).
// It is the only npm SQS emulator with ListDeadLetterSourceQueues and the message-move-task APIs;
// fauxqs (port 4566) is the more faithful one for everything else. See ../shared/FACTS.md.
import { createSqsServer } from 'local-aws-sqs';

const port = Number(process.env.PORT ?? 4577);
const server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false });
console.log(`local-aws-sqs listening on http://127.0.0.1:${port}`);
const stop = () => { void Promise.resolve(server.close?.()).finally(() => process.exit(0)); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
