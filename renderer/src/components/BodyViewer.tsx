import { useMemo, useState } from 'react';
import { describeLayers, hexDumpLines } from '../../../shared/body/decode';
import type { QueueMessage } from '../../../shared/domain/message';
import { decodedOf } from '../lib/decoded-cache';
import { bytes as formatBytes } from '../lib/format';
import { useStore } from '../store';
import type { Preferences } from '../store/types';
import { CappedText, LinesView } from './TextViews';

const TABS: { id: Preferences['bodyTab']; label: string }[] = [
  { id: 'pretty', label: 'Pretty' },
  { id: 'raw', label: 'Raw' },
  { id: 'hex', label: 'Hex' },
];

/** Largest body the Hex tab dumps (and Copy copies as hex), in bytes. */
const HEX_COPY_LIMIT = 1024 * 1024;

/**
 * A message body as text — never as HTML. Pretty (decoded layers, JSON indented), Raw (the
 * body as received), Hex (the decoded bytes). Shows the layers ("base64 → gzip → JSON"),
 * truncation, JSON errors, and copies the active tab's text.
 */
export function BodyViewer({ message }: { message: QueueMessage }) {
  const decoded = decodedOf(message);
  const tab = useStore((s) => s.preferences.bodyTab);
  const setPreference = useStore((s) => s.setPreference);
  const [copy, setCopy] = useState<{ ok: boolean; text: string } | null>(null);
  const prettyLines = useMemo(() => (decoded.format === 'json' ? decoded.text.split('\n') : []), [decoded]);
  const hexLineCount = Math.ceil(decoded.bytes.length / 16);
  const rawIsBase64 = message.body.encoding === 'base64';

  const tabText = (): string => {
    if (tab === 'pretty') return decoded.text;
    if (tab === 'raw') return message.body.data;
    return hexDumpLines(decoded.bytes, { length: HEX_COPY_LIMIT }).join('\n');
  };
  const onCopy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(tabText());
      setCopy({ ok: true, text: 'Copied' });
    } catch (e) {
      setCopy({ ok: false, text: `Copy failed: ${e instanceof Error ? e.message : String(e)}` });
    }
    setTimeout(() => setCopy(null), 2000);
  };

  return (
    <div className="body-viewer">
      <div className="body-toolbar">
        <div className="tabs" role="tablist" aria-label="Body view">
          {TABS.map((t) => (
            <button key={t.id} type="button" role="tab" aria-selected={tab === t.id} className={tab === t.id ? 'tab active' : 'tab'} onClick={() => setPreference('bodyTab', t.id)}>
              {t.label}
            </button>
          ))}
        </div>
        <span className="layers" title="How the body was decoded" data-testid="body-layers">
          {describeLayers(decoded)}
        </span>
        <span className="muted">{formatBytes(message.body.sizeBytes)}</span>
        <span className="spacer" />
        {copy !== null && <span className={copy.ok ? 'ok-text' : 'danger-text'}>{copy.text}</span>}
        <button type="button" className="btn btn-small" onClick={() => void onCopy()} disabled={tab === 'pretty' && decoded.format === 'binary'}>
          Copy
        </button>
      </div>
      {(decoded.truncated || decoded.warnings.length > 0 || decoded.jsonError !== undefined) && (
        <ul className="body-notes">
          {decoded.truncated && (
            <li className="warn-text">
              Truncated: showing the first {formatBytes(decoded.bytes.length)} of {formatBytes(message.body.sizeBytes)}.
            </li>
          )}
          {decoded.jsonError !== undefined && <li className="warn-text">Not valid JSON: {decoded.jsonError}</li>}
          {decoded.warnings.map((w, i) => (
            <li key={i} className="warn-text">
              {w}
            </li>
          ))}
        </ul>
      )}
      <div className="body-content" role="tabpanel">
        {tab === 'pretty' &&
          (decoded.format === 'binary' ? (
            <div className="body-binary">
              Binary body ({formatBytes(decoded.bytes.length)}): see{' '}
              <button type="button" className="link" onClick={() => setPreference('bodyTab', 'hex')}>
                Hex
              </button>
              .
            </div>
          ) : decoded.format === 'json' ? (
            <LinesView count={prettyLines.length} getLine={(i) => prettyLines[i] ?? ''} label="Message body" />
          ) : decoded.text === '' ? (
            <div className="body-binary muted">Empty body.</div>
          ) : (
            <CappedText text={decoded.text} label="Message body" />
          ))}
        {tab === 'raw' && (
          <>
            {rawIsBase64 && <div className="body-note muted">The body is not UTF-8 text; shown base64-encoded.</div>}
            <CappedText text={message.body.data} label="Raw message body" />
          </>
        )}
        {tab === 'hex' && (
          <>
            {decoded.layers.length > 0 && <div className="body-note muted">Bytes after decoding {decoded.layers.join(' → ')}.</div>}
            {hexLineCount === 0 ? (
              <div className="body-binary muted">Empty body.</div>
            ) : (
              <LinesView count={hexLineCount} getLine={(i) => hexDumpLines(decoded.bytes, { offset: i * 16, length: 16 })[0] ?? ''} label="Hex dump" />
            )}
          </>
        )}
      </div>
    </div>
  );
}
