/**
 * What a token may do, declared once (docs/reference/callers.md#scopes): each operation that needs a
 * token names the scope it needs (its declaration in src/api/), the OpenAPI document lists them,
 * and a token, a key or an identity provider's token grants some of them. In the open mode every
 * token has every scope, as the specification lets any token write.
 */
const SCOPES = {
  'bikes:write': 'Create, replace and update bikes',
  'bikes:delete': 'Delete bikes',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export const isScope = (name: string): name is Scope => Object.hasOwn(SCOPES, name);

/** Our scopes among `names`, in SCOPES' order: names of no scope of ours are no scope. */
export const scopesAmong = (names: Iterable<string>): Scope[] => {
  const given = new Set(names);
  return ALL_SCOPES.filter((scope) => given.has(scope));
};

/**
 * A list of scopes as an operator writes it (`bikes:write,bikes:delete`, or with spaces): every
 * name must be one of ours, at least one.
 */
export function parseScopes(text: string): Scope[] {
  const names = text.split(/[\s,]+/).filter(Boolean);
  const unknown = names.find((name) => !isScope(name));
  if (unknown !== undefined) throw new Error(`"${unknown}" is not a scope (the scopes: ${ALL_SCOPES.join(', ')})`);
  if (names.length === 0) throw new Error(`name at least one scope (the scopes: ${ALL_SCOPES.join(', ')})`);
  return scopesAmong(names);
}
