/** Visibility-timeout tuning (pure). Units: milliseconds everywhere. */
export * from './stats';
export * from './retry';
export * from './brokers';
export * from './types';
export * from './recommend';
export * from './import';
export * from './api';
export * from './littles-law';
