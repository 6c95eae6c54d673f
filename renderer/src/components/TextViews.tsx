import { useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { count as formatCount } from '../lib/format';
import { hasHidden, revealHidden } from '../lib/visible-text';

const LINE_HEIGHT = 18;
/** Up to this many lines render as one plain <pre>; more are virtualized. */
const PLAIN_LINES = 400;
/** Text views show this many characters before "Show all". */
export const TEXT_CAP = 100_000;

/**
 * Untrusted text as text nodes, with control, invisible and bidirectional formatting characters
 * shown as escapes (`\x1b`, `\u202e`) in a marked span instead of acting on the text around them
 * (see lib/visible-text.ts). The span's title names the code point. Copy buttons copy the original.
 */
export function Revealed({ text }: { text: string }) {
  if (!hasHidden(text)) return <>{text}</>;
  return (
    <>
      {revealHidden(text).map((p, i) =>
        'text' in p ? (
          p.text
        ) : (
          <span key={i} className="hidden-char" title={`U+${p.char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} (hidden character, shown escaped)`}>
            {p.escape}
          </span>
        ),
      )}
    </>
  );
}

/**
 * Many lines of monospaced text (pretty JSON, hex dump), rendered as text nodes only.
 * Small inputs render as one `<pre>`; large ones are virtualized by line so a 1 MiB body
 * stays responsive. Lines do not wrap (horizontal scroll).
 */
export function LinesView({ count, getLine, label }: { count: number; getLine: (i: number) => string; label: string }) {
  if (count <= PLAIN_LINES) {
    const text = Array.from({ length: count }, (_, i) => getLine(i)).join('\n');
    return (
      <pre className="body-pre" aria-label={label} data-testid="body-text">
        <Revealed text={text} />
      </pre>
    );
  }
  return <VirtualLines count={count} getLine={getLine} label={label} />;
}

function VirtualLines({ count, getLine, label }: { count: number; getLine: (i: number) => string; label: string }) {
  const ref = useRef<HTMLDivElement>(null);
  // eslint-disable-next-line react-hooks/incompatible-library -- TanStack Virtual returns functions React Compiler cannot memoize; this component is not compiled.
  const v = useVirtualizer({ count, getScrollElement: () => ref.current, estimateSize: () => LINE_HEIGHT, overscan: 30 });
  return (
    <div className="body-pre body-virtual" ref={ref} role="document" aria-label={label} data-testid="body-text">
      <div style={{ height: v.getTotalSize(), position: 'relative', minWidth: '100%' }}>
        {v.getVirtualItems().map((item) => (
          <div key={item.key} className="vline" style={{ position: 'absolute', top: 0, left: 0, height: LINE_HEIGHT, transform: `translateY(${item.start}px)` }}>
            <Revealed text={getLine(item.index)} />
          </div>
        ))}
      </div>
    </div>
  );
}

/** Wrapped text capped at {@link TEXT_CAP} characters with a "Show all" button; text nodes only. */
export function CappedText({ text, label }: { text: string; label: string }) {
  const [all, setAll] = useState(false);
  const cut = !all && text.length > TEXT_CAP;
  const shown = useMemo(() => (cut ? text.slice(0, TEXT_CAP) : text), [cut, text]);
  return (
    <>
      <pre className="body-pre wrap" aria-label={label} data-testid="body-text">
        <Revealed text={shown} />
      </pre>
      {cut && (
        <div className="cap-note">
          Showing the first {formatCount(TEXT_CAP)} of {formatCount(text.length)} characters.{' '}
          <button type="button" className="btn btn-small" onClick={() => setAll(true)}>
            Show all
          </button>
        </div>
      )}
    </>
  );
}
