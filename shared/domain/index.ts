export * from './errors';
export * from './connection';
export * from './connection-url';
export * from './queue';
export * from './message';
export * from './diagnostics';
export * from './operation';
