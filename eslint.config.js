import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: [...resolveIgnoresFromGitignore(), '**/dist/**'] }),
  {
    rules: {
      'n/prefer-node-protocol': 'error'
    }
  }
]
