# The bike catalog service's image, built by the compose files. NODE_IMAGE is the official Node.js
# LTS image; deploy/podman/stand-ins.sh builds a stand-in where it cannot be pulled.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first, so source edits do not re-run npm ci. npm ci's postinstall runs
# `prisma generate`, which needs the schema and prisma.config.ts.
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# The runtime needs neither the build tools nor the embedded PostgreSQL (an optional dependency:
# a container always has DATABASE_URL).
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The migrations: applied by `node dist/cli/migrate.js` (the compose stacks' migrate service), and
# checked by the service at start-up.
COPY --from=build /app/prisma ./prisma
USER node
EXPOSE 3000
# node itself is PID 1: SIGTERM from `docker compose stop` reaches the service, which finishes
# requests in flight and exits 0. `node dist/cli/migrate.js` (the migrate service's command) and
# `node dist/cli/seed.js` run the tools instead.
CMD ["node", "dist/server.js"]
