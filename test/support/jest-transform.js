/**
 * How jest compiles the code it loads, for every jest configuration: TypeScript with ts-jest; and
 * jose (the identity provider's tokens, src/auth/provider.ts), which ships as ES modules only.
 * Node loads those with require() (22.12 and later, 20.19), jest's own module system does not, so
 * jest compiles jose's files to CommonJS too.
 */
module.exports = {
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }],
    '/node_modules/jose/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'ES2023' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
};
