export declare const NODE_FLAGS: readonly string[];
export declare function hasYoungGenerationFlag(args: readonly string[]): boolean;
