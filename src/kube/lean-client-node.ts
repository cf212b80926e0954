// Loads @kubernetes/client-node's KubeConfig without the generated API package it
// imports. KubeConfig (dist/config.js) takes two names from dist/gen/index.js, for
// makeApiClient, which portico never calls; that index loads all of the generated models
// and API classes (about 1,000 modules): their sources, compiled code and module records
// held 25-30 MB of a cluster-mode process's heap (issue 12). This resolve hook gives
// config.js, and config.js only, a module exporting the same two names from the two
// files that define them. Evaluate it before anything imports the library.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { registerHooks } = process.getBuiltinModule('node:module');

const configUrl = import.meta.resolve('@kubernetes/client-node/dist/config.js');
const genIndexUrl = new URL('./gen/index.js', configUrl).href;
// The sources run with type stripping, dist/ compiled: the same extension as this file.
const leanUrl = new URL(`./client-node-gen${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (resolved.url !== genIndexUrl || context.parentURL !== configUrl) return resolved;
    return { url: leanUrl, shortCircuit: true };
  },
});
