// `LEASEHOLD_HIDE_PACKAGES=ioredis,redis node --import ./test/harness/hide-packages.mjs ...`: the
// process behaves as if those packages were not installed (resolving them fails with
// ERR_MODULE_NOT_FOUND), as on a machine with only iovalkey. Used by client-kinds.test.ts.
import { register } from 'node:module';

const hidden = (process.env.LEASEHOLD_HIDE_PACKAGES ?? '').split(',').filter(Boolean);

register(
  `data:text/javascript,${encodeURIComponent(`
    const hidden = ${JSON.stringify(hidden)};
    export async function resolve(specifier, context, next) {
      if (hidden.some((name) => specifier === name || specifier.startsWith(name + '/'))) {
        const error = new Error("Cannot find package '" + specifier + "' (hidden by test/harness/hide-packages.mjs)");
        error.code = 'ERR_MODULE_NOT_FOUND';
        throw error;
      }
      return next(specifier, context);
    }
  `)}`,
);
