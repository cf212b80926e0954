export declare const NODE_FLAGS: readonly string[];
export declare function missingFlags(args: readonly string[]): string[];
export declare const MALLOC_ENV: Readonly<Record<string, string>>;
export declare function hasMallocSetting(env: Readonly<Record<string, string | undefined>>): boolean;
export declare function withMallocEnv<T extends Record<string, string | undefined>>(env: T): T;
