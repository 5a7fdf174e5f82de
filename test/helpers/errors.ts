/** Test helpers for errors the code under test is expected to raise. */
import { isCredentialsError, type CredentialsError } from '../../src/base/errors.js';

/** The CredentialsError a promise rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<CredentialsError> {
  try {
    await promise;
  } catch (error) {
    if (!isCredentialsError(error))
      throw new Error(`expected a CredentialsError, got ${String(error)}`, { cause: error });
    return error;
  }
  throw new Error('expected an error');
}
