export declare const NODE_FLAGS: readonly string[];
export declare function missingFlags(args: readonly string[]): string[];
