/** The version of `@loom/core` (its package.json's; a test keeps the two equal). Engines report it in their presence. */
export const LOOM_VERSION = '0.1.0';
