// The Node flags portico runs with, however it is started (bin/portico.js adds them when
// missing; examples/start.ts passes them to the portico it starts; deploy/Dockerfile's
// ENTRYPOINT names them too).
//
// A young generation of at most 16 MB semispaces: V8 sizes it from the machine's memory
// (64 MB semispaces on a 24 GB machine) and keeps it at its largest once a load has grown
// it; deploy/Dockerfile says why 16.
export const NODE_FLAGS = ['--max-semi-space-size=16'];

/** True when `args` (execArgv, NODE_OPTIONS words) already set the young generation's size. */
export function hasYoungGenerationFlag(args) {
  return args.some((arg) => /^--max[-_]semi[-_]space[-_]size/.test(arg));
}
