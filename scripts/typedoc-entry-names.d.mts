/** Types of typedoc-entry-names.mjs (a plain TypeDoc plugin, loaded by typedoc.json without a compile step). */
import type { Application } from 'typedoc';

export declare function importNames(): Map<string, string>;
export declare function load(app: Application): void;
