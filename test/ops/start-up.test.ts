import { randomBytes } from 'node:crypto';
import { createTestDatabase } from '../support/databases';
import { launchService, spawnService, type ServiceProcess } from '../support/process';
import { waitFor } from '../support/wait';

interface LogLine {
  level: number;
  msg: string;
  port?: number;
}

function logLines(service: ServiceProcess): LogLine[] {
  return service
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

const LISTENING = /^listening on /;

async function stopped(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  await service.exited;
}

describe('the running service (node dist/server.js) at start-up', () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    env = { DATABASE_URL: await createTestDatabase(), JWT_SECRET: randomBytes(32).toString('base64url') };
  });

  it('once listening, logs one info line with the URL of the API and of its docs page, on the port it bound (PORT=0: the one the system chose)', async () => {
    const service = await launchService({ ...env, PORT: '0' });
    try {
      const line = await waitFor('the listening line', async () =>
        logLines(service).find((entry) => LISTENING.test(entry.msg)),
      );
      const port = line.port as number;
      expect(port).toBeGreaterThan(0);
      expect(line).toMatchObject({
        level: 30,
        msg: `listening on http://localhost:${port} — API docs at http://localhost:${port}/docs`,
      });
      expect(logLines(service).filter((entry) => LISTENING.test(entry.msg))).toHaveLength(1);

      // Both addresses in the line answer.
      const docs = await fetch(`http://localhost:${port}/docs`);
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await docs.text()).toContain('swagger-ui');
      expect((await fetch(`http://localhost:${port}/bikes/all`)).status).toBe(200);
    } finally {
      await stopped(service);
    }
  });

  it('when its port is held by another running service, exits 1 with one line on stderr naming the port and what to do, and the other keeps serving', async () => {
    const first = await spawnService(env);
    try {
      const port = new URL(first.baseUrl).port;
      const second = await launchService({ ...env, PORT: port });
      expect(await second.exited).toEqual({ code: 1, signal: null });
      expect(second.errors()).toBe(
        `bike catalog failed to start: port ${port} is already in use (is another \`npm start\` or \`npm run dev\` running?); ` +
          'set PORT to another port\n',
      );
      expect(logLines(second).filter((entry) => LISTENING.test(entry.msg))).toEqual([]);

      const health = await fetch(`${first.baseUrl}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      await stopped(first);
    }
  });
});
