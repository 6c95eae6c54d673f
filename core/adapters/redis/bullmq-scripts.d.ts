/** The installed bullmq's compiled Lua scripts (includes inlined); bullmq ships types for its ESM build only. */
declare module 'bullmq/dist/cjs/scripts/reprocessJob-9' {
  export const reprocessJob: { name: string; content: string; keys: number };
}
