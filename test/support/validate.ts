import type * as yup from 'yup';
import { check } from '../../src/http/schema';

/** `body` checked against `schema` as the service checks it (check); undefined when it does not pass. */
export function validate<T>(schema: yup.Schema<T>, body: unknown): T | undefined {
  const checked = check(schema, body);
  return checked.valid ? checked.value : undefined;
}
