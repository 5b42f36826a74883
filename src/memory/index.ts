/**
 * `leasehold/memory`: the in-memory backend, also exported from `leasehold`.
 * @module
 */
export { MemoryBackend } from './backend.ts';
