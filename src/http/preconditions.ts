/**
 * A write's preconditions (RFC 9110, 13.1.1 and 13.1.2), in states of the resource it writes:
 * what If-Match and If-None-Match require once their entity tags are read as states
 * (`conditionsOf` in conditional.ts). The endpoint judges them by a look at the resource
 * (`holds`); a repository carries the same rule in its write statements.
 */

/**
 * What one field requires: `any`, that the resource exists (If-Match) or does not
 * (If-None-Match); otherwise one of `states`, or none of them.
 */
export interface StateCondition {
  any: boolean;
  states: string[];
}

export interface WriteConditions {
  ifMatch?: StateCondition;
  ifNoneMatch?: StateCondition;
}

/**
 * Whether a resource in `state` (null: there is none) meets the conditions (RFC 9110, 13.2.2:
 * both are evaluated).
 */
export function holds({ ifMatch, ifNoneMatch }: WriteConditions, state: string | null): boolean {
  if (ifMatch && (state === null || !(ifMatch.any || ifMatch.states.includes(state)))) return false;
  if (ifNoneMatch && state !== null && (ifNoneMatch.any || ifNoneMatch.states.includes(state))) return false;
  return true;
}
