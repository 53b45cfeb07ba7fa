// ESLint for the extension's TypeScript: the recommended rules, type-aware where types catch
// real bugs (a promise nobody awaits, a value used as a condition that is always true).
// Formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/**", "dist/**", "bundled/**", "node_modules/**", "tests/e2e/**", ".tools/**"] },
  {
    files: ["extension/**/*.ts", "tests/extension/**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // node:test's test() returns a promise the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it"] }] },
      ],
    },
  },
);
