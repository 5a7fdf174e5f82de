/** Types of test-node-floor.mjs (a plain script so that `npm test` runs it without a compile step). */
export declare function floorVersion(): Promise<string>;
export declare function ensureNpmNode(version: string, options?: { log?: (line: string) => void }): Promise<string>;
