// What @kubernetes/client-node's KubeConfig (dist/config.js) takes from its generated
// API package, from the two modules that define it (see lean-client-node.ts).
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
