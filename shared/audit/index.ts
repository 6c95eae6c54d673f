/** Pre-release configuration audit (pure): rule catalog, evaluation over facts, measurements, formatters. */
export * from './types';
export * from './catalog';
export * from './evaluate';
export * from './measurements';
export * from './format';
export { fmtMs } from './rule-kit';
