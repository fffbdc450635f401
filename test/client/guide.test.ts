import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { type Relay, relayTo } from '../support/exchanges';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';
import { CLIENT, codeBlock, newProject, npm } from './project';

/**
 * client/README.md's sync script, as a shop runs it: installed into a project of its own, against
 * the real service. It keeps catalog.json equal to /bikes/all through creates, updates and deletes,
 * and, stopped and started again, goes on from where it stood, changes made meanwhile included.
 * (Its page that edits safely runs in Chromium: test/browser/client.browser.ts.)
 */

const GUIDE = path.join(CLIENT, 'README.md');

describe("client/README.md's sync script", () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-sync-'));
  let svc: TestService;
  /** The script reaches the service through this process, so its answers are judged against /openapi.json. */
  let relay: Relay;
  let project: string;

  beforeAll(async () => {
    svc = await startTestService();
    relay = await relayTo(svc.baseUrl);
    project = newProject(home, 'shop');
    npm(['install', CLIENT], project);
    const script = codeBlock(GUIDE, "## A shop's sync script", 'js');
    fs.writeFileSync(path.join(project, 'sync.mjs'), script.replaceAll('http://localhost:3000', relay.baseUrl));
  });
  afterAll(async () => {
    await relay?.close();
    await svc.stop();
    fs.rmSync(home, { recursive: true, force: true });
  });

  const run = () => spawn(process.execPath, ['sync.mjs'], { cwd: project, stdio: 'inherit' });
  const stopped = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGINT');
    });
  /** Until catalog.json holds /bikes/all, bike for bike. */
  const inStep = () =>
    waitFor(
      'catalog.json to be /bikes/all',
      async () => {
        const all = (await (await fetch(`${svc.baseUrl}/bikes/all`)).json()) as Bike[];
        const file = path.join(project, 'catalog.json');
        if (!fs.existsSync(file)) return undefined;
        const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { bikes: Record<string, Bike> };
        return JSON.stringify(saved.bikes) === JSON.stringify(Object.fromEntries(all.map((bike) => [bike.id, bike])))
          ? true
          : undefined;
      },
      { everyMs: 200 },
    );

  it('keeps catalog.json in step, and goes on from where it stood after a restart', async () => {
    expect(codeBlock(GUIDE, "## A shop's sync script", 'js').trim().split('\n').length).toBeLessThanOrEqual(15);
    const api = client(svc.baseUrl, await svc.token());
    const bikes = [await api.create(newBike()), await api.create(newBike()), await api.create(newBike())];
    let sync = run();
    try {
      await inStep();
      await api.request('PATCH', `/bikes/${bikes[0].id}`, { body: { totalInventory: 1 } });
      await api.request('DELETE', `/bikes/${bikes[1].id}`);
      await api.create(newBike());
      await inStep();
      await stopped(sync);
      // While it is stopped.
      await api.request('DELETE', `/bikes/${bikes[2].id}`);
      await api.create(newBike());
      sync = run();
      await inStep();
    } finally {
      await stopped(sync);
    }
  });
});
