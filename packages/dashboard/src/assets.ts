import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A file the dashboard serves from its package. */
export interface Asset {
  body: Buffer;
  contentType: string;
}

const FILES: Record<string, string> = {
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/**
 * The stylesheet, the page script and the icon, read once from the package's `assets/` folder
 * (beside `src/` and `dist/`): nothing is fetched from anywhere else, and users build nothing.
 * `version` is a hash of their contents, put in asset URLs so browsers never keep an old script.
 */
export function loadAssets(): { files: Map<string, Asset>; version: string } {
  const dir = fileURLToPath(new URL('../assets/', import.meta.url));
  const files = new Map<string, Asset>();
  const hash = createHash('sha256');
  for (const [name, contentType] of Object.entries(FILES)) {
    const body = readFileSync(dir + name);
    hash.update(body);
    files.set(name, { body, contentType });
  }
  return { files, version: hash.digest('base64url').slice(0, 12) };
}
