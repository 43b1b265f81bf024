import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** The Chromium the browser tests drive: `CHROMIUM_PATH`, else Debian's `chromium` (`.ci/run` installs it). */
export function chromiumPath(): string {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH=${configured} does not exist`);
    return configured;
  }
  const found = CANDIDATES.find((p) => existsSync(p));
  if (!found)
    throw new Error(
      `No Chromium for the dashboard's browser tests: install it (apt-get install -y chromium) or set CHROMIUM_PATH. Looked in ${CANDIDATES.join(', ')}`,
    );
  return found;
}

/** One headless Chromium per test file. */
export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in CI containers needs --no-sandbox; /dev/shm is small there.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check', '--disable-extensions'],
  });
}

/** Where screenshots go (gitignored): `test-artifacts/dashboard/` at the repository root. */
export const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/dashboard/', import.meta.url));

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  // Less PNG compression (a larger file), the same pixels: encoding was a sixth of a layout check.
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true, optimizeForSpeed: true });
}

/** A page that records what a correct dashboard never produces: console errors (CSP violations among them) and failed requests. */
export async function watchedPage(browser: Browser): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${String(err)}`));
  page.on('requestfailed', (req) => {
    // An EventSource closed by navigation is not a failure.
    if (!req.url().includes('/events')) problems.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`);
  });
  return { page, problems };
}

/** What page callbacks (`$eval`, `waitForFunction`) read of an element: the tests have Node's types, not the DOM's. */
export interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** The serious and critical axe-core violations of the page as loaded, one line each. */
export async function axeProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  // Every rule runs; only violations are gathered in full (axe-core's `resultTypes`): the passes
  // and the rules that did not apply, never read here, were most of a run's time.
  const result = (await page.evaluate(() =>
    (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeViolation[] }> } }).axe.run({ resultTypes: ['violations'] }),
  )) as {
    violations: AxeViolation[];
  };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')})`);
}
