// Module resolution hook (registered by conversion_client.mjs with node:module's register()).
//
// The generated code in gen/ts imports its runtime by package name ("@bufbuild/protobuf/codegenv2"),
// but gen/ts sits outside this package, and Node's ESM loader looks for node_modules only in the
// importing file's ancestor directories (NODE_PATH does not apply to ESM). So package imports made
// by files under gen/ts are resolved as if made from here, i.e. from clients/ts/node_modules, where
// package-lock.json pins the runtime that matches the generator.
const generatedRoot = new URL("../../gen/ts/", import.meta.url).href;
// A relative path, an absolute path, or a URL (which covers "node:" built-ins) is not a package name.
const notPackageName = /^(\.{0,2}\/|[a-z][a-z0-9+.-]*:)/i;

export async function resolve(specifier, context, nextResolve) {
  if (context.parentURL?.startsWith(generatedRoot) && !notPackageName.test(specifier)) {
    return nextResolve(specifier, { ...context, parentURL: import.meta.url });
  }
  return nextResolve(specifier, context);
}
