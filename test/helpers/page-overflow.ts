// What "fits the viewport" means for the dashboard's pages, checked in the browser: the page never scrolls sideways,
// and nothing in main is wider than the viewport unless a scrolling ancestor (.table-scroll) holds it.
import type { Page } from 'playwright-core';

export interface PageOverflow {
  /** the document's scroll width: more than `width` means the page scrolls sideways */
  scrollWidth: number;
  width: number;
  /** up to five elements of main that stick out of the viewport with no scrolling ancestor */
  wide: string[];
  /** the shown tables (in their .table-scroll; not one in a closed <details>) wider than the space they have: seen
   * whole only by scrolling them sideways */
  clipped: string[];
}

const MEASURE = `(() => {
  const width = window.innerWidth;
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return true; } return false; };
  const wide = [...document.querySelectorAll('main *')].filter((el) => el.getBoundingClientRect().right > width + 1 && !scrolls(el));
  const clipped = [...document.querySelectorAll('main .table-scroll')].filter((el) => el.checkVisibility() && el.scrollWidth > el.clientWidth + 1);
  const name = (el) => el.tagName + '.' + el.className;
  return { scrollWidth: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5).map(name), clipped: clipped.map((el) => name(el.querySelector('table') ?? el)) };
})()`;

export async function measureOverflow(page: Page): Promise<PageOverflow> {
  return (await page.evaluate(MEASURE)) as PageOverflow;
}
