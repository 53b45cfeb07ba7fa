// Imported first by extension.ts, so this marks when the bundle began to load.
export const LOAD_STARTED_MS = performance.now();
