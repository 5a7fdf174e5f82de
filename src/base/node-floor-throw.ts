/**
 * First import of the library's entry points: on a Node.js older than the floor, importing the package throws a
 * CredentialsError `ERR_NODE_VERSION` whose message names the version found and the one needed.
 */
import { CredentialsError } from './errors.js';
import { NODE_FLOOR_CODE, nodeFloorProblem } from './node-floor.js';

const problem = nodeFloorProblem();
if (problem !== undefined) {
  throw new CredentialsError(NODE_FLOOR_CODE, problem);
}
