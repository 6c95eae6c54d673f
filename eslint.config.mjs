// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import { defineConfig } from 'eslint/config';

/**
 * Layer rules (see ARCHITECTURE.md). Each folder may import only what is listed there;
 * the restrictions below make a violation a lint error.
 */
const nodeBuiltins = ['node:*', 'fs', 'path', 'os', 'child_process', 'net', 'tls', 'http', 'https', 'crypto', 'zlib', 'stream', 'events', 'url', 'util', 'readline', 'worker_threads'];

const noElectron = { group: ['electron', 'electron/*'], message: 'Only electron/ may import electron.' };
const noNode = { group: nodeBuiltins, message: 'This layer runs in the browser too: no Node built-ins.' };
const noCore = { group: ['**/core/**', '**/core'], message: 'Only electron/main, scripts, tests and bench may import core/.' };
const noElectronDir = { group: ['**/electron/**'], message: 'Nothing imports from electron/.' };
const noRenderer = { group: ['**/renderer/**'], message: 'Nothing imports from renderer/.' };
const noReact = { group: ['react', 'react-dom', 'react/*', 'zustand'], message: 'shared/ is UI-free.' };
const brokerClients = { group: ['ioredis', 'bullmq', 'amqplib', '@aws-sdk/*'], message: 'Broker clients belong in core/adapters/<broker>/.' };

export default defineConfig(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', 'tools/**', 'coverage/**', '**/*.cjs', 'resources/**', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.mjs', 'scripts/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-confusing-void-expression': 'off',
      '@typescript-eslint/no-unnecessary-condition': ['error', { allowConstantLoopConditions: true }],
      'no-control-regex': 'off',
    },
  },
  {
    // Plain JS scripts and configs: Node globals, no type-aware rules.
    files: ['**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [noElectron, noNode, noCore, noElectronDir, noRenderer, noReact, brokerClients] }],
      'no-restricted-globals': ['error', 'window', 'document', 'localStorage', 'navigator', 'process', 'Buffer', 'require'],
    },
  },
  {
    files: ['core/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noElectron, noElectronDir, noRenderer, noReact] }] },
  },
  {
    files: ['core/{services,cli,web,snapshot,redrive,audit,tuning,config,inspect}/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noElectron, noElectronDir, noRenderer, noReact, brokerClients] }] },
  },
  {
    files: ['renderer/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      'no-restricted-imports': ['error', { patterns: [noElectron, noNode, noCore, noElectronDir, brokerClients] }],
      'no-restricted-properties': ['error', { property: 'innerHTML', message: 'Message bodies are untrusted: render text.' }, { property: 'outerHTML', message: 'Render text.' }],
      'no-restricted-syntax': ['error', { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: 'Message bodies are untrusted: never render HTML.' }],
    },
  },
  {
    files: ['electron/preload/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noCore, noRenderer, brokerClients, noNode] }] },
  },
  {
    files: ['**/*.test.ts', '**/*.test.tsx', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
