import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The client's folder, as a clone of this repository has it. */
export const CLIENT = path.join(__dirname, '..', '..', 'client');

/**
 * The environment npm runs in as a user's shell has it: none of the npm_* settings of the
 * `npm test` that runs the tests, and offline (the client has no dependencies to fetch).
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return { ...env, npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
}

/** An empty project of a user's, `name` in `parent`: a 0700 folder with a package.json. */
export function newProject(parent: string, name: string): string {
  const dir = path.join(parent, name);
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, private: true }));
  return dir;
}

/** `npm <args>` in `cwd`, as a user runs it; what it printed. */
export function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, env: npmEnv(), encoding: 'utf8' });
}

/** A `lang` code block of the Markdown section under `heading` of the file. */
export function codeBlock(file: string, heading: string, lang: string): string {
  const text = fs.readFileSync(file, 'utf8');
  const section = text.slice(text.indexOf(`\n${heading}\n`)).split(/\n## /)[1] ?? '';
  const block = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section);
  if (!block) throw new Error(`${path.basename(file)} has no ${lang} block under "${heading}"`);
  return block[1];
}
