import type { StateCreator } from 'zustand';
import type { AuditFix, AuditReport, FixPreview } from '../../../shared/audit/types';
import type { ErrorInfo } from '../../../shared/domain';
import { call, errorInfoOf } from '../api';
import type { All, LoadStatus } from './types';

/** The audit of one connection as shown on the audit page. */
export interface AuditRunState {
  status: LoadStatus;
  error: ErrorInfo | null;
  report: AuditReport | null;
}

/** A one-click fix being confirmed or applied. */
export interface FixDialogState {
  connectionId: string;
  fix: AuditFix;
  status: 'previewing' | 'ready' | 'applying' | 'applied' | 'error';
  preview: FixPreview | null;
  /** After apply: the settings read back. */
  result: FixPreview | null;
  error: ErrorInfo | null;
}

export interface AuditSlice {
  audits: Record<string, AuditRunState | undefined>;
  /** audit.run for a connection (the previous report stays shown while it runs). */
  runAudit: (connectionId: string) => Promise<void>;
  fixDialog: FixDialogState | null;
  /** Opens the confirmation and loads the before/after (audit.fix.preview). */
  openFix: (connectionId: string, fix: AuditFix) => Promise<void>;
  /** audit.fix.apply, then re-runs the audit. */
  applyFix: () => Promise<void>;
  closeFix: () => void;
}

/** Audit page state: reports per connection and the one-click fix dialog. */
export const createAuditSlice: StateCreator<All, [], [], AuditSlice> = (set, get) => ({
  audits: {},
  async runAudit(connectionId) {
    const prev = get().audits[connectionId];
    set((s) => ({ audits: { ...s.audits, [connectionId]: { status: 'loading', error: null, report: prev?.report ?? null } } }));
    try {
      const report = await call('audit.run', { connectionId });
      set((s) => ({ audits: { ...s.audits, [connectionId]: { status: 'ready', error: null, report } } }));
    } catch (e) {
      set((s) => ({ audits: { ...s.audits, [connectionId]: { status: 'error', error: errorInfoOf(e), report: prev?.report ?? null } } }));
    }
  },
  fixDialog: null,
  async openFix(connectionId, fix) {
    set({ fixDialog: { connectionId, fix, status: 'previewing', preview: null, result: null, error: null } });
    try {
      const preview = await call('audit.fix.preview', { connectionId, fix });
      set((s) => (s.fixDialog?.fix === fix ? { fixDialog: { ...s.fixDialog, status: 'ready', preview } } : {}));
    } catch (e) {
      set((s) => (s.fixDialog?.fix === fix ? { fixDialog: { ...s.fixDialog, status: 'error', error: errorInfoOf(e) } } : {}));
    }
  },
  async applyFix() {
    const d = get().fixDialog;
    if (d?.status !== 'ready') return;
    set({ fixDialog: { ...d, status: 'applying' } });
    try {
      const result = await call('audit.fix.apply', { connectionId: d.connectionId, fix: d.fix });
      set((s) => (s.fixDialog?.fix === d.fix ? { fixDialog: { ...s.fixDialog, status: 'applied', result } } : {}));
      await get().runAudit(d.connectionId);
    } catch (e) {
      set((s) => (s.fixDialog?.fix === d.fix ? { fixDialog: { ...s.fixDialog, status: 'error', error: errorInfoOf(e) } } : {}));
    }
  },
  closeFix() {
    set({ fixDialog: null });
  },
});
