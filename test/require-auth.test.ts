import { randomUUID } from 'node:crypto';
import { ConfigError, readConfig } from '../src/config';
import { createTestDatabase } from './support/databases';
import { capturedLog } from './support/log';
import { FAKE_ANSWERS, type LoopbackPort, loopbackPort } from './support/loopback-port';
import { isAtMostTheStartupMessage } from './support/neighbour';
import { startTestService, type TestService } from './support/service';
import { waitFor } from './support/wait';

/**
 * DATABASE_URL with a password to a loopback address accepts SCRAM-SHA-256 only, unless its
 * require_auth says otherwise (docs/configuration.md#how-the-service-authenticates-to-postgresql):
 * whoever holds the port a moment, while the server restarts, asked for the password in clear
 * and got the service role's, or let the service in without asking and received its queries
 * (issue 37).
 */

const REFUSALS: Record<(typeof FAKE_ANSWERS)[number], RegExp> = {
  cleartext: /^refused to authenticate to the database server on 127\.0\.0\.1:\d+: it asked for the password in clear/,
  md5: /^refused to authenticate to the database server on 127\.0\.0\.1:\d+: it asked for an MD5 hash of the password/,
  ok: /^refused to authenticate to the database server on 127\.0\.0\.1:\d+: it let us in without asking/,
  ready: /^refused to authenticate to the database server on 127\.0\.0\.1:\d+: it let us in without asking/,
};

describe('DATABASE_URL on a loopback port that another takes while the server is away', () => {
  let port: LoopbackPort;
  let service: TestService;
  let password: string;
  const log = capturedLog();
  beforeAll(async () => {
    const url = await createTestDatabase();
    password = decodeURIComponent(new URL(url).password);
    port = await loopbackPort(url);
    service = await startTestService({ databaseUrl: port.url, logger: log.logger });
  });
  afterAll(async () => {
    await service.stop();
    await port.close();
  });

  it.each(FAKE_ANSWERS)(
    'a fake that answers %s hears neither the password nor a query; requests answer 503, the refusal is logged once, and the service serves again once the server is back',
    async (answers) => {
      port.fake(answers);
      const statuses = new Set<number>();
      // The pool and the watch on the server try again and again: each attempt is refused.
      await waitFor('three connections to the fake', async () => {
        statuses.add((await fetch(`${service.baseUrl}/bikes/${randomUUID()}`)).status);
        return port.heard().length >= 3 ? true : undefined;
      });
      const heard = port.heard();
      port.forward();

      expect(heard.some((bytes) => bytes.includes(password))).toBe(false);
      expect(heard.map(isAtMostTheStartupMessage)).toEqual(heard.map(() => true));
      expect([...statuses]).toEqual([503]);
      expect(log.lines.filter((line) => REFUSALS[answers].test(line.msg))).toHaveLength(1);
      await waitFor('the service to serve again', async () =>
        (await fetch(`${service.baseUrl}/bikes/${randomUUID()}`)).status === 404 ? true : undefined,
      );
    },
  );
});

describe('require_auth in a connection string', () => {
  const env = (url: string) => ({ DATABASE_URL: url, JWT_SECRET: 'a-secret-for-this-test-only-0123456789' });

  it('a value libpq does not know stops the service at start, naming the variable and not the URL', () => {
    const read = () => readConfig(env('postgresql://svc:not-printed@127.0.0.1:5432/db?require_auth=kerberos'));
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(/^DATABASE_URL: require_auth names password, md5, scram-sha-256, none/);
    expect(read).not.toThrow(/not-printed/);
  });

  it('methods and negated ones mixed are refused, as libpq refuses them', () => {
    expect(() => readConfig(env('postgresql://svc:pw@127.0.0.1:5432/db?require_auth=md5,!password'))).toThrow(
      /^DATABASE_URL: require_auth cannot mix methods and negated ones/,
    );
  });
});
