import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createTestDatabase } from '../support/databases';
import { freePort } from '../support/process';
import { tempDataDir } from '../support/temp-dir';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');

/** A copy of the sources to run `npm run dev` in, so that its builds and edits leave this dist/ alone. */
function copySources(dir: string): void {
  for (const entry of ['package.json', 'tsconfig.json', 'src', 'prisma']) {
    fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules'));
}

function holdPort(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(port, () => resolve(server));
  });
}

/** The environment of a service on `port` with a test database of its own, and nothing inherited that would override it. */
async function serviceEnv(port: number): Promise<NodeJS.ProcessEnv> {
  const { DATABASE_URL: _url, JWT_SECRET: _secret, DATA_DIR: _dir, ...inherited } = process.env;
  return {
    ...inherited,
    PORT: String(port),
    DATABASE_URL: await createTestDatabase(),
    JWT_SECRET: randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'info',
  };
}

interface Run {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

/** `command <args>` in `dir`, in a process group of its own (stopped as Ctrl-C stops it, watchers included). */
function run(command: string, dir: string, args: string[], env: NodeJS.ProcessEnv): Run {
  const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output: () => output, exited };
}

const npm = (dir: string, args: string[], env: NodeJS.ProcessEnv) => run('npm', dir, args, env);
const npx = (dir: string, args: string[], env: NodeJS.ProcessEnv) => run('npx', dir, args, env);

/** Stops `run` and everything it started, as Ctrl-C does; a group already gone (ESRCH) has stopped. */
async function interrupt(run: Run): Promise<void> {
  try {
    process.kill(-(run.child.pid as number), 'SIGINT');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  await run.exited;
}

const seen = (run: Run, text: string) => () => (run.output().includes(text) ? true : undefined);

/** How many times the service has said it listens on `port`: one more each time it restarts. */
const listenings = (run: Run, port: number) =>
  run
    .output()
    .split('\n')
    .filter((line) => line.includes(`listening on http://localhost:${port}`)).length;

const mtimeOf = (file: string) => fs.statSync(file).mtimeMs;

describe('npm run dev', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDataDir('dev');
    copySources(dir);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('says loudly when its port is taken, then rebuilds and restarts when a file under src/ changes, with readable logs', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    const dev = npm(dir, ['run', 'dev'], await serviceEnv(port));
    try {
      await waitFor(
        'the port failure',
        seen(
          dev,
          `bike catalog failed to start: port ${port} is already in use (is another \`npm start\` or \`npm run dev\` running?)`,
        ),
      );
      expect(dev.output()).not.toContain('listening on');
      await new Promise((resolve) => holder.close(resolve));

      // An edit the running service can show: the docs page's title.
      const page = path.join(dir, 'src', 'http', 'docs-router.ts');
      fs.writeFileSync(page, fs.readFileSync(page, 'utf8').replace('<title>Bike catalog API', '<title>Edited API'));
      const listening = `listening on http://localhost:${port} — API docs at http://localhost:${port}/docs`;
      // tsc --watch's first pass may restart the service once before the edit is compiled: what
      // counts is that the edited page is served, without a hand on the service.
      const docsPage = () =>
        fetch(`http://localhost:${port}/docs`).then(
          (res) => res.text(),
          () => '',
        );
      await waitFor(
        'the edited page',
        async () => ((await docsPage()).includes('<title>Edited API</title>') ? true : undefined),
        { everyMs: 250 },
      );

      // Human-readable lines (pino-pretty, in a worker: they may follow the page by a moment), not JSON.
      await waitFor('the listening line', seen(dev, listening));
      const line = dev
        .output()
        .split('\n')
        .find((text) => text.includes(listening));
      expect(line).toMatch(/^\[[\d-]+ [\d:.]+ [^\]]*\] INFO: listening on /);
    } finally {
      await interrupt(dev);
      holder.close();
    }
  });

  it('goes on serving while `npm start` and `npm run db:*` run in the same clone, and when node_modules is touched: it runs from dist-dev/ and watches nothing else', async () => {
    const port = await freePort();
    const env = await serviceEnv(port);
    const dev = npm(dir, ['run', 'dev'], env);
    try {
      await waitFor('the dev server', seen(dev, `listening on http://localhost:${port}`));
      // tsc --watch's first pass finds dist-dev/ up to date (npm run dev built it just before) and
      // writes nothing, so it restarts nothing.
      await waitFor('the watcher', seen(dev, 'Watching for file changes'));
      const before = listenings(dev, port);

      // npm start builds dist/ (the dev server never sees it), then finds the port taken: one line, and it exits.
      const start = npm(dir, ['start'], env);
      expect(await start.exited).toBe(1);
      const failures = start
        .output()
        .split('\n')
        .filter((line) => line.includes('failed to start'));
      expect(failures).toEqual([
        `bike catalog failed to start: port ${port} is already in use (is another \`npm start\` or \`npm run dev\` running?); set PORT to another port`,
      ]);

      // A db:* command with nothing changed in src/ rewrites nothing and does not wait for tsc:
      // tsc -b finds the build up to date, so it skips the project without checking it.
      const built = [path.join(dir, 'dist', 'server.js'), path.join(dir, 'dist', '.tsbuildinfo')];
      const builtAt = built.map(mtimeOf);
      for (let round = 0; round < 2; round++) {
        const upToDate = npx(dir, ['tsc', '-b', 'tsconfig.json', '--dry', '--verbose'], env);
        expect(await upToDate.exited).toBe(0);
        expect(upToDate.output()).toContain("Project 'tsconfig.json' is up to date");
        const migrate = npm(dir, ['run', 'db:migrate'], env);
        expect(await migrate.exited).toBe(0);
        expect(migrate.output()).toContain('database is up to date');
        expect(built.map(mtimeOf)).toEqual(builtAt);
      }

      // Something touching node_modules (here the attributes of a module the server loaded, as a
      // `cp -al` of node_modules does to every file's link count) is not a change to the build.
      const loaded = fs.realpathSync(require.resolve('koa', { paths: [dir] }));
      const { atime, mtime } = fs.statSync(loaded);
      fs.utimesSync(loaded, atime, mtime);
      // Time for a restart to show, were there one: on a busy machine this check can only miss one,
      // never fail a dev server that does not restart.
      await new Promise((resolve) => setTimeout(resolve, 1_000));

      // The dev server still answers, and never restarted.
      expect((await fetch(`http://localhost:${port}/healthz`)).status).toBe(200);
      expect(listenings(dev, port)).toBe(before);
    } finally {
      await interrupt(dev);
    }
  });
});
