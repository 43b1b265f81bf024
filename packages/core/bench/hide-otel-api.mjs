// `node --import ./hide-otel-api.mjs app.mjs`: runs app.mjs as if @opentelemetry/api were not
// installed (its import fails with ERR_MODULE_NOT_FOUND), for the bench's "without the API"
// figure and the test that core works without it.
import { register } from 'node:module';

const hook = `
export async function resolve(specifier, context, next) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/api/')) {
    const error = new Error("Cannot find package '@opentelemetry/api' (hidden by hide-otel-api.mjs)");
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
