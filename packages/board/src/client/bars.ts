// A small bar chart of counts: one bar per period, its height set through the CSSOM (allowed by the page's
// Content-Security-Policy, which refuses style attributes), its count in a title for the pointer.
import { el } from './dom.js'

export function bars(counts: number[], label: (index: number) => string, id: string): HTMLElement {
  const max = Math.max(1, ...counts)
  const chart = el('div', {
    class: 'bars',
    id,
    role: 'img',
    'aria-label': `${counts.reduce((a, b) => a + b, 0)} in all`,
  })
  counts.forEach((count, index) => {
    const bar = el('span', { title: `${label(index)}: ${count}` })
    bar.style.height = `${count === 0 ? 0 : Math.max(4, Math.round((count / max) * 100))}%`
    chart.append(bar)
  })
  return chart
}
