import { spawn } from 'node:child_process';
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
    const { DATABASE_URL: _url, JWT_SECRET: _secret, DATA_DIR: _dir, ...inherited } = process.env;
    const dev = spawn('npm', ['run', 'dev'], {
      cwd: dir,
      env: {
        ...inherited,
        PORT: String(port),
        DATABASE_URL: await createTestDatabase(),
        JWT_SECRET: randomBytes(32).toString('base64url'),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: stopped at the end as Ctrl-C stops it, watchers included.
      detached: true,
    });
    let output = '';
    dev.stdout.on('data', (chunk) => (output += chunk));
    dev.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise((resolve) => dev.once('exit', resolve));
    const seen = (text: string) => () => (output.includes(text) ? true : undefined);
    try {
      await waitFor(
        'the port failure',
        seen(`bike catalog failed to start: port ${port} is already in use (is another \`npm start\` running?)`),
        60_000,
      );
      expect(output).not.toContain('listening on');
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
        60_000,
        250,
      );

      // Human-readable lines (pino-pretty, in a worker: they may follow the page by a moment), not JSON.
      await waitFor('the listening line', seen(listening), 10_000);
      const line = output.split('\n').find((text) => text.includes(listening));
      expect(line).toMatch(/^\[[\d-]+ [\d:.]+ [^\]]*\] INFO: listening on /);
    } finally {
      process.kill(-(dev.pid as number), 'SIGINT');
      await exited;
      holder.close();
    }
  }, 120_000);
});
