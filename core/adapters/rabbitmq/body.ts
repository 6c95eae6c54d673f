/** Body helpers are shared by all adapters: see core/adapters/body.ts. */
export { DEFAULT_MAX_BODY_BYTES, toMessageBody } from '../body';
