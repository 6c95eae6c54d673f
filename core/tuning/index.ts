/** Visibility-timeout tuning: measurement orchestration, file import, apply with audit log (issue 5). Units: ms. */
export * from './run';
export * from './file-source';
export * from './api-handlers';
