/**
 * The one place core/inspect imports the pure analysis from (shared/analysis, issue 3), so a
 * change of its entry points touches only this file.
 */
export { analyzeMessage, compareDuplicates, createQueueSummary } from '../../shared/analysis';
export type { AnalyzeOptions, DuplicateComparison, KeyVerdictKind, MessageAnalysis, PayloadVerdictKind, RedeliverySummary } from '../../shared/analysis/types';
