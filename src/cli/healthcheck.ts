/**
 * The container's health check (`node dist/cli/healthcheck.js`): exits 0 when /readyz on PORT
 * answers 200 (PostgreSQL answers and every migration is applied), 1 otherwise. A file rather
 * than `node -e '...'`, because podman's Docker API splits a health check's arguments at spaces.
 */
const TIMEOUT_MS = 2_000;

fetch(`http://127.0.0.1:${process.env.PORT ?? '3000'}/readyz`, { signal: AbortSignal.timeout(TIMEOUT_MS) }).then(
  (res) => process.exit(res.ok ? 0 : 1),
  () => process.exit(1),
);
