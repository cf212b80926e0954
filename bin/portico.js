#!/usr/bin/env node
// Entry point of the `portico` CLI. portico runs on Node 24 (TypeScript type
// stripping, undici 8). When this file is started by an older Node (the system
// one on many machines), re-run it under the Node 24 that `npm install` pinned
// in node_modules, so `node bin/portico.js` works either way.
//
// It also runs with NODE_FLAGS and MALLOC_ENV (bin/node-flags.js: the young generation's
// cap, the old generation's growth and the malloc setting the container image sets).
// Without them, `npm start` and every other way of running portico would hold up to
// ~100 MB more per process than the image. They must be given when Node starts, so the
// process replaces itself (process.execve: same PID, same stdio) with those it lacks,
// unless it has them all already, or was started with an IPC channel (a node:cluster
// worker, which inherits them, or examples/start.ts), which would not survive the exec:
// those pass them themselves. A flag or malloc threshold the user set keeps its value.
//
// And V8's optimizing compilers are off while portico starts (src/util/compilers.ts turns
// them back on and says why), from before any module of portico's is resolved: resolving
// even ./node-flags.js ran node:path's normaliser hot enough for V8 to compile it. Not
// when the operator chose them with a flag of their own (OPERATOR_COMPILER_FLAG, in either
// spelling): then they stay as the operator set them.
//
// Built-ins through process.getBuiltinModule, not import: an ESM import reads every export
// of a built-in, and the lazy ones load more modules (node:fs's loads fs/promises and
// readline, in every process). An older Node lacks it: it only re-runs this file.
const builtin = (id) => process.getBuiltinModule?.(id) ?? import(id);
const { existsSync } = await builtin('node:fs');
const { fileURLToPath } = await builtin('node:url');
const { setFlagsFromString } = await builtin('node:v8');

const OPERATOR_COMPILER_FLAG =
  /^--(no-)?(sparkplug|maglev|turbofan|opt|jitless|max-opt|lite-mode|always-sparkplug|always-turbofan|invocation-count-for-turbofan|maglev-overwrite-budget|osr-from-maglev|max-maglev-inlined-bytecode-size|min-maglev-inlining-frequency)(=|$)/;
const nodeArgs = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
const major = Number(process.versions.node.split('.')[0]);
const deferringCompilers = major >= 24 && !nodeArgs.some((arg) => OPERATOR_COMPILER_FLAG.test(arg.replaceAll('_', '-')));
if (deferringCompilers) for (const flag of ['--no-sparkplug', '--no-maglev', '--no-turbofan']) setFlagsFromString(flag);
const { hasMallocSetting, missingFlags, withMallocEnv } = await import('./node-flags.js');
const missing = missingFlags(nodeArgs);
if (major >= 24 && (missing.length > 0 || !hasMallocSetting(process.env)) && process.channel === undefined && typeof process.execve === 'function') {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...missing, fileURLToPath(import.meta.url), ...process.argv.slice(2)], withMallocEnv(process.env));
}
if (major < 24) {
  const pinned = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(pinned)) {
    console.error(`portico: needs Node.js >= 24 (this is ${process.version}); run "npm install" to fetch the pinned Node 24`);
    process.exit(1);
  }
  const { spawn } = await builtin('node:child_process');
  const child = spawn(pinned, [...missing, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: withMallocEnv(process.env) });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
} else {
  // In production (the container image sets NODE_ENV=production and runs `npm run
  // build`), the compiled dist/: type stripping costs about 19 MB per process. In
  // development, the sources themselves, so an edit never runs stale code.
  const compiled = new URL('../dist/cli.js', import.meta.url);
  const useDist = process.env.NODE_ENV === 'production' && existsSync(fileURLToPath(compiled));
  // Off above; src/util/compilers.ts turns them back on.
  if (deferringCompilers) (await import(useDist ? '../dist/util/compilers.js' : '../src/util/compilers.ts')).compilersDeferredAtStart();
  const { main } = await import(useDist ? compiled.href : '../src/cli.ts');
  await main(process.argv.slice(2));
}
